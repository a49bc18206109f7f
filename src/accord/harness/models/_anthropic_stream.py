"""Reading a Messages API stream ourselves: Anthropic's Server-Sent Events, read by the same
bounded reader as OpenAI's (accord.harness.models._sse) and decoded with msgspec, reading only
the fields the harness uses, where the ``anthropic`` package would build a typed model of
every event.

The events read: ``message_start`` (the input usage), ``content_block_start`` / ``_delta`` /
``_stop`` for ``text``, ``tool_use`` (its input whole at the start, or in ``input_json_delta``
pieces), ``thinking`` and ``redacted_thinking`` blocks, ``message_delta`` (the stop reason and
the usage, running totals), ``message_stop``, ``ping`` and ``error``. Anthropic's versioning
policy says new event types may be added to a stream: an event of another type is skipped, as
is a block or a delta of a type accord does not know. Bounds as OpenAI's
(accord.harness.models._openai_stream): 1 MiB a line, 64 tool calls, 1 Mi characters of a
call's input, its name and id 1 Ki, the answer's text (and thinking) 16 Mi.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing

import msgspec

from accord.harness.models._adapter import (
    MAX_ARGUMENTS,
    MAX_NAME,
    MAX_TEXT,
    MAX_TOOL_CALLS,
    TOO_LONG,
    Failed,
    Failure,
    read_events,
    refused,
)
from accord.harness.models._base import TextDelta


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class _Message(msgspec.Struct):
    usage: _Usage | None = None


class _Block(msgspec.Struct):
    type: str = ""
    id: str = ""
    name: str = ""
    text: str = ""
    input: msgspec.Raw = msgspec.Raw()
    thinking: str = ""
    signature: str = ""
    data: str = ""


class _Delta(msgspec.Struct):
    type: str = ""
    text: str = ""
    partial_json: str = ""
    thinking: str = ""
    signature: str = ""
    stop_reason: str | None = None


class _Error(msgspec.Struct):
    type: str = ""
    message: str = ""


class _Event(msgspec.Struct):
    type: str = ""
    index: int | None = None
    message: _Message | None = None
    content_block: _Block | None = None
    delta: _Delta | None = None
    usage: _Usage | None = None
    error: _Error | None = None


_event = msgspec.json.Decoder(_Event)
USAGE = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class Block:
    __slots__ = ("data", "id", "input", "name", "signature", "text", "type")

    def __init__(self, kind: str) -> None:
        self.type = kind
        self.id = ""
        self.name = ""
        self.text: list[str] = []  # text, thinking, or a tool's input in pieces
        self.input = b""  # a tool's input given whole at the block's start
        self.signature = ""
        self.data = ""


class MessageAnswer:
    """One streamed answer as its events build it, each part bounded as it grows."""

    __slots__ = ("blocks", "calls", "size", "stop_reason", "used")

    def __init__(self) -> None:
        self.blocks: dict[int, Block] = {}
        self.stop_reason: str | None = None
        self.used: dict[str, int] = {}
        self.size = 0  # characters of text and thinking
        self.calls = 0

    def _grow(self, piece: str) -> None:
        self.size += len(piece)
        if self.size > MAX_TEXT:
            raise refused(f"an answer of more than {MAX_TEXT} characters of text")

    def _count(self, usage: _Usage | None) -> None:
        if usage is None:
            return
        for name in USAGE:
            value = getattr(usage, name)
            if value is not None:
                self.used[name] = value

    def _start(self, index: int, given: _Block) -> str:
        block = Block(given.type)
        if given.type == "tool_use":
            self.calls += 1
            if self.calls > MAX_TOOL_CALLS:
                raise refused(f"more than {MAX_TOOL_CALLS} tool calls in one answer")
            if len(given.id) > MAX_NAME or len(given.name) > MAX_NAME:
                raise refused(f"a tool call's name or id longer than {MAX_NAME} characters")
            block.id, block.name = given.id, given.name
            if len(given.input) > MAX_ARGUMENTS:
                raise refused(f"tool call {given.name!r}: input longer than {MAX_ARGUMENTS}")
            block.input = bytes(given.input)
        elif given.type == "redacted_thinking":
            self._grow(given.data)
            block.data = given.data
        elif given.type in ("text", "thinking"):
            given_text = given.text if given.type == "text" else given.thinking
            if given_text:
                self._grow(given_text)
                block.text.append(given_text)
            block.signature = given.signature
        self.blocks[index] = block
        return given.text if given.type == "text" else ""

    def _delta(self, index: int, delta: _Delta) -> str:
        block = self.blocks.get(index)
        if block is None:
            raise refused(f"a delta of block {index}, which never started")
        kind = delta.type
        if kind == "text_delta" and block.type == "text":
            self._grow(delta.text)
            block.text.append(delta.text)
            return delta.text
        if kind == "input_json_delta" and block.type == "tool_use":
            size = sum(map(len, block.text)) + len(delta.partial_json)
            if size > MAX_ARGUMENTS:
                raise refused(
                    f"tool call {block.name!r}: arguments longer than {MAX_ARGUMENTS} characters"
                )
            block.text.append(delta.partial_json)
        elif kind == "thinking_delta" and block.type == "thinking":
            self._grow(delta.thinking)
            block.text.append(delta.thinking)
        elif kind == "signature_delta" and block.type == "thinking":
            if len(block.signature) + len(delta.signature) > MAX_ARGUMENTS:
                raise refused("a thinking block's signature longer than its bound")
            block.signature += delta.signature
        return ""

    def read(self, event: _Event) -> str:
        """Takes one event in; returns the text it adds to the answer ("" if none)."""
        kind = event.type
        if kind == "content_block_delta" and event.delta is not None:
            return self._delta(event.index or 0, event.delta)
        if kind == "content_block_start" and event.content_block is not None:
            if event.index is None or not 0 <= event.index <= 4 * MAX_TOOL_CALLS:
                raise refused(f"a content block's index out of bounds ({event.index})")
            return self._start(event.index, event.content_block)
        if kind == "message_start" and event.message is not None:
            self._count(event.message.usage)
        elif kind == "message_delta":
            if event.delta is not None and event.delta.stop_reason:
                self.stop_reason = event.delta.stop_reason
            self._count(event.usage)
        elif kind == "error":
            said = event.error or _Error()
            raise Failed(stream_error(said.type, said.message))
        return ""

    def ordered(self) -> list[Block]:
        return [self.blocks[index] for index in sorted(self.blocks)]


def stream_error(kind: str, message: str) -> Failure:
    """An ``error`` event: classified as the HTTP error of its type would be."""
    return classify(200, kind, message or "no reason given", None)


def classify(status: int, kind: str, message: str, asked: float | None) -> Failure:
    """What an error of the Messages API means: an HTTP status (with its error's type and
    message), or (status 200) an ``error`` event on the stream."""
    says = f"HTTP {status}" if status >= 400 else "an error on the stream"
    says += f" ({kind}): {message}" if kind else f": {message}"
    if status == 429 or kind == "rate_limit_error":
        return Failure("rate_limited", says, True, asked)
    if status >= 500 or kind in ("overloaded_error", "api_error"):
        return Failure("model_unavailable", says, True, asked)
    if status == 413 or kind == "request_too_large" or any(w in message.lower() for w in TOO_LONG):
        return Failure("context_too_long", says)
    return Failure("model_error", says)


async def message_events(
    received: AsyncIterator[bytes], answer: MessageAnswer
) -> AsyncGenerator[TextDelta]:
    """The text deltas of a Messages API stream as they come, ``answer`` filled as it goes;
    it ends at ``message_stop`` or with the stream."""
    async with aclosing(read_events(received)) as stream:
        async for events in stream:
            for event in events:
                try:
                    read: _Event = _event.decode(event.data)
                except msgspec.DecodeError as exc:
                    raise refused(f"an event accord cannot read ({exc})") from None
                text = answer.read(read)
                if text:
                    yield TextDelta(text)
                elif read.type == "message_stop":
                    return
