"""Claude through Anthropic's Messages API, streamed.

- **The call and its stream**: accord's own HTTP client makes the call (the default: a POST
  to ``/v1/messages`` with ``x-api-key`` and ``anthropic-version``,
  accord.harness.models._http), or the official ``anthropic`` package does (``client =
  "package"``: ``messages.with_streaming_response``, the body accord built in
  ``extra_body``; the package is imported only then); accord reads the stream itself,
  bounded (accord.harness.models._anthropic_stream).
- **Streaming**: each ``text_delta`` goes to the turn as it comes; tool calls (``tool_use``
  blocks, their input streamed as ``input_json_delta`` pieces, several in one answer) come
  with the whole response.
- **Prompt caching**: the static prefix — the tools and the system prompt — and the
  conversation so far are marked ``cache_control`` (ephemeral), so that the next call of the
  turn, and the next turn, read them from the cache.
- **Usage**, once per call: the input of ``message_start`` (the fresh tokens, plus those read
  from and written to the cache) and the output of the last ``message_delta`` (a running
  total, never added up).
- **Extended thinking** is off unless the settings set it (a budget of tokens, or
  ``adaptive``). Thinking is never shown; its blocks, signed, go back to the API with the
  tool calls they led to, as the API requires within a turn. They are kept in memory only: a
  turn resumed after a restart goes on without thinking until its next tool-free answer.
- **Failures**: the retries of :mod:`accord.harness.models._adapter` (never once any of an
  answer has come), then :class:`ModelError` with the kind of failure — a connection error,
  a 5xx or 529 ``overloaded_error`` ``model_unavailable``; a 429 ``rate_limited`` (its
  ``retry-after`` honoured up to a bound); a prompt longer than the model's window
  ``context_too_long``; a ``refusal`` stop ``model_refused``; anything else ``model_error``.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Literal

from accord.errors import AccordError
from accord.harness._transcript import Conversation, ToolCall
from accord.harness.models._adapter import (
    Failed,
    Failure,
    Retry,
    client_failure,
    read_response,
    retried,
    retry_after,
    tool_call,
    whole,
)
from accord.harness.models._anthropic_stream import MessageAnswer, classify, message_events
from accord.harness.models._base import ModelError, ModelEvent, ModelResponse, TextDelta, Usage
from accord.harness.models._http import HttpClient, StatusError
from accord.harness.models._prompt import anthropic_messages, anthropic_tools

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

log = logging.getLogger("accord.harness.model")
# The Messages API version accord's client sends (what the anthropic package, 2.17, sends)
API_VERSION = "2026-10-21"

CACHED = {"type": "ephemeral"}
THOUGHTS_KEPT = 256  # answers whose thinking is kept for the tool results that follow them


class AnthropicModel:
    """One Claude model. ``client`` — accord's :class:`HttpClient` (to the server's root, with
    :func:`headers`) or the package's ``AsyncAnthropic`` — is shared by every model of the
    endpoint."""

    def __init__(
        self,
        name: str,
        client: HttpClient | AsyncAnthropic,
        *,
        max_tokens: int = 8_192,
        thinking: int | Literal["adaptive"] = 0,
        retry: Retry | None = None,
    ) -> None:
        self.name = name
        # (Any: the package's overloads cannot type a call whose options vary per request)
        self.client: Any = client
        self.max_tokens = max_tokens
        self.thinking = thinking
        self.retry = retry or Retry()
        # The thinking blocks of recent answers that called tools, by their first call's id
        self._thoughts: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    @property
    def label(self) -> str:
        """The model as the settings name it."""
        return f"anthropic:{self.name}"

    async def respond(self, conversation: Conversation) -> ModelResponse:
        return await whole(self.stream(conversation))

    def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        return retried(
            lambda: self._call(conversation), model=self.label, retry=self.retry, read=_failure
        )

    def request(self, conversation: Conversation) -> dict[str, Any]:
        """The Messages API request for the conversation (streamed)."""
        system, messages = anthropic_messages(conversation)
        request: dict[str, Any] = {
            "model": self.name,
            "max_tokens": self.max_tokens,
            "messages": messages,
            "stream": True,
        }
        if system:
            request["system"] = [{"type": "text", "text": system, "cache_control": CACHED}]
        if conversation.tools:
            tools = anthropic_tools(conversation.tools)
            tools[-1]["cache_control"] = CACHED
            request["tools"] = tools
        if messages:
            last = messages[-1]["content"]
            last[-1] = {**last[-1], "cache_control": CACHED}
        if self.thinking and self._recall_thinking(messages):
            request["thinking"] = (
                {"type": "adaptive"}
                if self.thinking == "adaptive"
                else {"type": "enabled", "budget_tokens": self.thinking}
            )
        return request

    def _recall_thinking(self, messages: list[dict[str, Any]]) -> bool:
        """Puts each tool-calling answer's thinking back before its calls; False when the
        turn is in a tool loop whose last answer's thinking is not known (the call then goes
        without thinking: the API refuses a loop's answer without its thinking)."""
        known = True
        for message in messages:
            if message["role"] != "assistant":
                continue
            calls = [block["id"] for block in message["content"] if block["type"] == "tool_use"]
            thoughts = self._thoughts.get(calls[0]) if calls else None
            if thoughts:
                message["content"][:0] = thoughts
            known = not calls or bool(thoughts)
        in_loop = bool(messages) and messages[-1]["content"][0]["type"] == "tool_result"
        return known or not in_loop

    def _remember_thinking(self, call_id: str, thoughts: list[dict[str, Any]]) -> None:
        self._thoughts[call_id] = thoughts
        while len(self._thoughts) > THOUGHTS_KEPT:
            self._thoughts.popitem(last=False)

    def _call(self, conversation: Conversation) -> AsyncGenerator[ModelEvent]:
        body = self.request(conversation)
        answer = MessageAnswer()
        if isinstance(self.client, HttpClient):
            client = self.client
            return self._answered(
                answer,
                read_response(
                    lambda: client.post_json("/v1/messages", body),
                    lambda received: message_events(received, answer),
                ),
            )
        create = self.client.messages.with_streaming_response.create
        return self._answered(
            answer,
            read_response(
                lambda: create(
                    model=self.name,
                    max_tokens=self.max_tokens,
                    messages=[],
                    stream=True,
                    extra_body=body,
                ),
                lambda received: message_events(received, answer),
            ),
        )

    async def _answered(
        self, answer: MessageAnswer, deltas: AsyncGenerator[TextDelta]
    ) -> AsyncGenerator[ModelEvent]:
        async with aclosing(deltas) as read:
            async for delta in read:
                yield delta
        if answer.stop_reason is None:
            raise _Unfinished
        if answer.stop_reason == "refusal":
            raise ModelError(
                f"model {self.label}: the model refused to answer",
                reason="model_refused",
                model=self.label,
            )
        if answer.stop_reason in ("max_tokens", "model_context_window_exceeded"):
            log.warning("model %s: the answer was cut (%s)", self.label, answer.stop_reason)
        calls = _tool_calls(answer)
        thoughts = _thoughts(answer)
        if calls and thoughts:
            self._remember_thinking(calls[0].id, thoughts)
        text = "".join("".join(b.text) for b in answer.ordered() if b.type == "text")
        yield ModelResponse(text=text, tool_calls=calls, usage=_usage(answer.used))


def headers(api_key: str) -> dict[str, str]:
    """The headers of every Messages API call made by accord's HTTP client."""
    return {"x-api-key": api_key, "anthropic-version": API_VERSION}


def _tool_calls(answer: MessageAnswer) -> tuple[ToolCall, ...]:
    # (the input streamed in pieces; or whole at the block's start, as some servers that speak
    # the Messages API send it)
    return tuple(
        tool_call(b.id, b.name, "".join(b.text) or b.input.decode("utf-8", "replace") or "{}")
        for b in answer.ordered()
        if b.type == "tool_use"
    )


def _thoughts(answer: MessageAnswer) -> list[dict[str, Any]]:
    """The answer's thinking blocks, as the API wants them back."""
    kept: list[dict[str, Any]] = []
    for block in answer.ordered():
        if block.type == "thinking":
            thought = "".join(block.text)
            kept.append({"type": "thinking", "thinking": thought, "signature": block.signature})
        elif block.type == "redacted_thinking":
            kept.append({"type": "redacted_thinking", "data": block.data})
    return kept


def _usage(used: dict[str, int]) -> Usage | None:
    if not used:
        return None
    read = used.get("cache_read_input_tokens", 0)
    written = used.get("cache_creation_input_tokens", 0)
    return Usage(
        input_tokens=used.get("input_tokens", 0) + read + written,
        output_tokens=used.get("output_tokens", 0),
        cached_tokens=read,
    )


class _Unfinished(AccordError):
    """The stream ended before the answer did (no stop reason came)."""


def _failure(error: Exception) -> Failure | None:
    """What an error of accord's HTTP client, or of the anthropic package (or of its HTTP
    client), means."""
    if isinstance(error, Failed):
        return error.failure
    if isinstance(error, _Unfinished):
        return Failure("model_unavailable", "the stream ended before the answer did", True)
    if isinstance(error, StatusError):
        return classify(error.status, error.kind, error.message, retry_after(error.headers))
    return client_failure(error, "anthropic", "AnthropicError", _status_failure)


def _status_failure(error: Any) -> Failure:
    """What an ``anthropic.APIStatusError`` means."""
    kind, message = "", error.message
    said = error.body.get("error") if isinstance(error.body, dict) else None
    if isinstance(said, dict):  # {"type": "error", "error": {"type": …, "message": …}}
        kind, message = str(said.get("type") or ""), str(said.get("message") or message)
    return classify(error.status_code, kind, message, retry_after(error.response.headers))
