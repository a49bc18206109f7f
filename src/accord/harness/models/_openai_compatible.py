"""Models behind any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, LM Studio, OpenRouter):
Chat Completions or the Responses API, streamed.

The call goes through accord's own HTTP client (accord.harness.models._http, the default: a
POST with ``Authorization: Bearer``) or through the official ``openai`` package (``client =
"package"``: it makes the call — key, base URL, timeout, HTTP errors). Either way accord
builds the request's body and reads the streamed events itself
(accord.harness.models._openai_stream: bounded, decoded with msgspec), where the package would
check every parameter and build a typed model of every chunk. The package is imported only
when its client is used.

A call is retried only while nothing of its answer has come (a refused connection, a 429 or
5xx before the stream starts), with backoff; once the first byte of an answer is in, the call
is never made again (its tokens may already be on clients' streams): a stream that breaks
then fails the call with :class:`ModelError`. The client's own retries are off for the same
reason.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from accord.harness._transcript import Conversation
from accord.harness.models._adapter import (
    TOO_LONG,
    Failure,
    Retry,
    client_failure,
    read_response,
    retried,
    retry_after,
    whole,
)
from accord.harness.models._base import ModelEvent, ModelResponse
from accord.harness.models._http import HttpClient, StatusError
from accord.harness.models._openai_stream import Failed, chat_events, responses_events
from accord.harness.models._prompt import (
    chat_messages,
    chat_tools,
    responses_input,
    responses_tools,
    system_text,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

log = logging.getLogger("accord.harness.model")

Api = Literal["chat", "responses"]


class OpenAIModel:
    """One model name on one endpoint. ``client`` — accord's :class:`HttpClient` (to the
    endpoint's base URL, with its ``Authorization`` header) or the package's ``AsyncOpenAI`` —
    is shared by every model of the endpoint."""

    def __init__(
        self,
        name: str,
        client: HttpClient | AsyncOpenAI,
        *,
        api: Api = "chat",
        retry: Retry | None = None,
        cache_key: bool = True,  # send prompt_cache_key (a server may refuse fields it lacks)
    ) -> None:
        self.name = name
        self.cache_key = cache_key
        # (Any: the package's overloads cannot type a call whose options vary per request)
        self.client: Any = client
        self.api = api
        self.retry = retry or Retry()

    async def respond(self, conversation: Conversation) -> ModelResponse:
        return await whole(self.stream(conversation))

    @property
    def label(self) -> str:
        """The model as the settings name it."""
        return f"openai:{self.name}"

    def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        call = self._chat if self.api == "chat" else self._responses
        return retried(
            lambda: call(conversation), model=self.label, retry=self.retry, read=_failure
        )

    def _cache_key(self, conversation: Conversation) -> dict[str, Any]:
        return {"prompt_cache_key": conversation.task_id} if self.cache_key else {}

    # --- Chat Completions ------------------------------------------------------------------

    def _chat(self, conversation: Conversation) -> AsyncGenerator[ModelEvent]:
        body: dict[str, Any] = {
            "model": self.name,
            "messages": chat_messages(conversation),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if conversation.tools:
            body["tools"] = chat_tools(conversation.tools)
        if conversation.reasoning_effort:
            body["reasoning_effort"] = conversation.reasoning_effort
        body.update(self._cache_key(conversation))
        if isinstance(self.client, HttpClient):
            client = self.client
            return read_response(lambda: client.post_json("/chat/completions", body), chat_events)
        create = self.client.chat.completions.with_streaming_response.create
        return read_response(
            lambda: create(model=self.name, messages=[], stream=True, extra_body=body), chat_events
        )

    # --- Responses -------------------------------------------------------------------------

    def _responses(self, conversation: Conversation) -> AsyncGenerator[ModelEvent]:
        body: dict[str, Any] = {
            "model": self.name,
            "instructions": system_text(conversation),
            "input": responses_input(conversation),
            "stream": True,
            "store": False,
        }
        if conversation.tools:
            body["tools"] = responses_tools(conversation.tools)
        if conversation.reasoning_effort:
            body["reasoning"] = {"effort": conversation.reasoning_effort}
        body.update(self._cache_key(conversation))
        if isinstance(self.client, HttpClient):
            client = self.client
            return read_response(lambda: client.post_json("/responses", body), responses_events)
        create = self.client.responses.with_streaming_response.create
        return read_response(
            lambda: create(model=self.name, input=[], stream=True, extra_body=body),
            responses_events,
        )


def _failure(error: Exception) -> Failure | None:
    """What an error of accord's HTTP client, or of the openai package, means."""
    if isinstance(error, Failed):
        return error.failure
    if isinstance(error, StatusError):
        return _status(error.status, error.code, error.message, error.headers)
    return client_failure(error, "openai", "OpenAIError", _package_status, ValueError)


def _package_status(error: Any) -> Failure:
    """What an ``openai.APIStatusError`` means."""
    code = str(getattr(error, "code", None) or "")
    return _status(error.status_code, code, error.message, error.response.headers)


def _status(status: int, code: str, message: str, headers: Mapping[str, str]) -> Failure:
    """What an HTTP error status means: its status, the error's code and message."""
    says = f"HTTP {status} from the endpoint: {message}"
    asked = retry_after(headers)
    if status == 429:
        if code == "insufficient_quota":  # (no wait makes this one pass)
            return Failure("rate_limited", says)
        return Failure("rate_limited", says, True, asked)
    if status >= 500:
        return Failure("model_unavailable", says, True, asked)
    text = message.lower()
    if code == "context_length_exceeded" or status == 413 or any(w in text for w in TOO_LONG):
        return Failure("context_too_long", says)
    if code == "content_filter" or "content management policy" in text:
        return Failure("model_refused", says)
    return Failure("model_error", says)
