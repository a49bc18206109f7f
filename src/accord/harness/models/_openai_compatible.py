"""Models behind any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, LM Studio, OpenRouter),
through the official ``openai`` package: Chat Completions or the Responses API, streamed.

A call is retried only while nothing of its answer has come (a refused connection, a 429 or
5xx before the stream starts), with backoff; once the first byte of an answer is in, the call
is never made again (its tokens may already be on clients' streams): a stream that breaks
then fails the call with :class:`ModelError`. The client's own retries are off for the same
reason.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Literal

import openai
from openai import AsyncOpenAI
from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseErrorEvent,
    ResponseFailedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemDoneEvent,
    ResponseTextDeltaEvent,
)

from accord.errors import AccordError
from accord.harness._transcript import Conversation, ToolCall
from accord.harness.models._adapter import (
    TOO_LONG,
    Failure,
    Retry,
    broken,
    retried,
    retry_after,
    tool_call,
    unreachable,
    whole,
)
from accord.harness.models._base import ModelEvent, ModelResponse, TextDelta, Usage
from accord.harness.models._prompt import (
    chat_messages,
    chat_tools,
    responses_input,
    responses_tools,
    system_text,
)

log = logging.getLogger("accord.harness.model")

Api = Literal["chat", "responses"]


class OpenAIModel:
    """One model name on one endpoint. ``client`` is shared by every model of the endpoint."""

    def __init__(
        self,
        name: str,
        client: AsyncOpenAI,
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

    async def _chat(self, conversation: Conversation) -> AsyncGenerator[ModelEvent]:
        options: dict[str, Any] = {}
        if conversation.tools:
            options["tools"] = chat_tools(conversation.tools)
        if conversation.reasoning_effort:
            options["reasoning_effort"] = conversation.reasoning_effort
        stream = await self.client.chat.completions.create(
            model=self.name,
            messages=chat_messages(conversation),
            stream=True,
            stream_options={"include_usage": True},
            **options,
            **self._cache_key(conversation),
        )
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage: Usage | None = None
        filtered = False
        async for chunk in stream:
            if chunk.usage is not None:
                details = chunk.usage.prompt_tokens_details
                usage = Usage(
                    input_tokens=chunk.usage.prompt_tokens,
                    output_tokens=chunk.usage.completion_tokens,
                    cached_tokens=(details.cached_tokens or 0) if details is not None else 0,
                )
            for choice in chunk.choices:
                filtered = filtered or choice.finish_reason == "content_filter"
                delta = choice.delta
                if delta.content:
                    text.append(delta.content)
                    yield TextDelta(delta.content)
                for piece in delta.tool_calls or ():
                    found = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
                    found["id"] = piece.id or found["id"]
                    if piece.function is not None:
                        found["name"] += piece.function.name or ""
                        found["arguments"] += piece.function.arguments or ""
        if filtered and not text and not calls:
            raise _Failed(Failure("model_refused", "the model refused to answer (content filter)"))
        yield ModelResponse(
            text="".join(text),
            tool_calls=tuple(
                tool_call(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())
            ),
            usage=usage,
        )

    # --- Responses -------------------------------------------------------------------------

    async def _responses(self, conversation: Conversation) -> AsyncGenerator[ModelEvent]:
        options: dict[str, Any] = {}
        if conversation.tools:
            options["tools"] = responses_tools(conversation.tools)
        if conversation.reasoning_effort:
            options["reasoning"] = {"effort": conversation.reasoning_effort}
        stream = await self.client.responses.create(
            model=self.name,
            instructions=system_text(conversation),
            input=responses_input(conversation),
            stream=True,
            store=False,
            **options,
            **self._cache_key(conversation),
        )
        text: list[str] = []
        calls: list[ToolCall] = []
        usage: Usage | None = None
        async for event in stream:
            if isinstance(event, ResponseTextDeltaEvent):
                text.append(event.delta)
                yield TextDelta(event.delta)
            elif isinstance(event, ResponseOutputItemDoneEvent) and isinstance(
                event.item, ResponseFunctionToolCall
            ):
                item = event.item
                calls.append(tool_call(item.call_id, item.name, item.arguments))
            elif isinstance(event, ResponseCompletedEvent) and event.response.usage is not None:
                used = event.response.usage
                details = used.input_tokens_details
                usage = Usage(
                    input_tokens=used.input_tokens,
                    output_tokens=used.output_tokens,
                    cached_tokens=(details.cached_tokens or 0) if details is not None else 0,
                )
            elif isinstance(event, ResponseFailedEvent | ResponseErrorEvent):
                raise _stream_failure(event)
        yield ModelResponse(text="".join(text), tool_calls=tuple(calls), usage=usage)


def _failure(error: Exception) -> Failure | None:
    """What an error of the openai package means."""
    if isinstance(error, _Failed):
        return error.failure
    if isinstance(error, openai.APITimeoutError):
        return Failure("model_unavailable", "the endpoint did not answer in time", True)
    if isinstance(error, openai.APIConnectionError):
        return Failure("model_unavailable", unreachable(error), True)
    if isinstance(error, openai.APIStatusError):
        return _status_failure(error)
    if isinstance(error, openai.OpenAIError | ValueError):
        return Failure("model_error", str(error) or type(error).__name__)
    return broken(error)


def _status_failure(error: openai.APIStatusError) -> Failure:
    status, code = error.status_code, str(getattr(error, "code", None) or "")
    says = f"HTTP {status} from the endpoint: {error.message}"
    asked = retry_after(error.response.headers)
    if status == 429:
        if code == "insufficient_quota":  # (no wait makes this one pass)
            return Failure("rate_limited", says)
        return Failure("rate_limited", says, True, asked)
    if status >= 500:
        return Failure("model_unavailable", says, True, asked)
    text = error.message.lower()
    if code == "context_length_exceeded" or status == 413 or any(w in text for w in TOO_LONG):
        return Failure("context_too_long", says)
    if code == "content_filter" or "content management policy" in text:
        return Failure("model_refused", says)
    return Failure("model_error", says)


class _Failed(AccordError):
    """A failure the endpoint told on the stream (a Responses API ``error`` event)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.says)
        self.failure = failure


def _stream_failure(event: Any) -> _Failed:
    error = getattr(getattr(event, "response", None), "error", None) or event
    code = str(getattr(error, "code", "") or "")
    says = f"the response failed: {getattr(error, 'message', error)}"
    if code in ("rate_limit_exceeded",):
        return _Failed(Failure("rate_limited", says, True))
    if code in ("server_error", "vector_store_timeout"):
        return _Failed(Failure("model_unavailable", says, True))
    if code == "context_length_exceeded":
        return _Failed(Failure("context_too_long", says))
    return _Failed(Failure("model_error", says))
