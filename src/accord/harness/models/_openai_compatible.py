"""Models behind any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, LM Studio, OpenRouter),
through the official ``openai`` package: Chat Completions or the Responses API, streamed.

A call is retried only while nothing of its answer has come (a refused connection, a 429 or
5xx before the stream starts), with backoff; once the first byte of an answer is in, the call
is never made again (its tokens may already be on clients' streams): a stream that breaks
then fails the call with :class:`ModelError`. The client's own retries are off for the same
reason.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
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

from accord.harness._transcript import Conversation, ToolCall
from accord.harness.models._adapter import Retry, tool_call, whole
from accord.harness.models._base import ModelError, ModelEvent, ModelResponse, TextDelta, Usage
from accord.harness.models._prompt import (
    chat_messages,
    chat_tools,
    responses_input,
    responses_tools,
    system_text,
)

log = logging.getLogger("accord.harness.model")

Api = Literal["chat", "responses"]


def _retryable(error: BaseException) -> bool:
    if isinstance(error, openai.APIConnectionError | openai.APITimeoutError):
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code == 429 or error.status_code >= 500
    return False


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

    async def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        call = self._chat if self.api == "chat" else self._responses
        started = False
        for attempt in range(self.retry.attempts):
            try:
                async for event in call(conversation):
                    started = True
                    yield event
                return
            except (openai.OpenAIError, ValueError) as exc:
                if started or not _retryable(exc) or attempt + 1 == self.retry.attempts:
                    raise ModelError(f"model {self.name}: {_describe(exc)}") from exc
                delay = self.retry.delay(attempt)
                log.info("model %s: %s; trying again in %.1f s", self.name, _describe(exc), delay)
                await asyncio.sleep(delay)

    def _cache_key(self, conversation: Conversation) -> dict[str, Any]:
        return {"prompt_cache_key": conversation.task_id} if self.cache_key else {}

    # --- Chat Completions ------------------------------------------------------------------

    async def _chat(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
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
        async for chunk in stream:
            if chunk.usage is not None:
                details = chunk.usage.prompt_tokens_details
                usage = Usage(
                    input_tokens=chunk.usage.prompt_tokens,
                    output_tokens=chunk.usage.completion_tokens,
                    cached_tokens=(details.cached_tokens or 0) if details is not None else 0,
                )
            for choice in chunk.choices:
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
        yield ModelResponse(
            text="".join(text),
            tool_calls=tuple(
                tool_call(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())
            ),
            usage=usage,
        )

    # --- Responses -------------------------------------------------------------------------

    async def _responses(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
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
                raise ModelError(f"model {self.name}: the response failed: {_event_error(event)}")
        yield ModelResponse(text="".join(text), tool_calls=tuple(calls), usage=usage)


def _describe(error: BaseException) -> str:
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code} from the endpoint: {error.message}"
    if isinstance(error, openai.APITimeoutError):
        return "the endpoint did not answer in time"
    if isinstance(error, openai.APIConnectionError):
        return f"cannot reach the endpoint ({error.__cause__ or error})"
    return str(error) or type(error).__name__


def _event_error(event: Any) -> str:
    error = getattr(getattr(event, "response", None), "error", None) or event
    return str(getattr(error, "message", error))
