"""Reading an OpenAI-compatible stream ourselves: the Server-Sent Events of Chat Completions
or of the Responses API, decoded with msgspec into the harness's events (text deltas as they
come, then the whole :class:`ModelResponse`).

The ``openai`` package still makes the call (its key, base URL, timeout and HTTP errors);
what it would do to each event — build a typed model of it, ~60 µs a chunk — is done here
in a few µs, reading only the fields the harness uses. Everything the endpoint sends is
bounded: a line (and an event's data) at 1 MiB, an answer at 64 tool calls, a call's
arguments at 1 Mi characters, its name and id at 1 Ki, the answer's text at 16 Mi. Past a
bound, or on an event that is not what the API defines, the call fails saying what the
endpoint sent (:class:`Failed`, a ``model_error``; the stream's own errors keep their kind).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

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
    tool_call,
)
from accord.harness.models._base import ModelEvent, ModelResponse, TextDelta, Usage

# --- what accord reads of the events (msgspec skips every other field) ----------------------


class _Details(msgspec.Struct):
    cached_tokens: int | None = None


class _Error(msgspec.Struct):
    message: str | None = None
    code: str | int | None = None
    type: str | None = None


class _Function(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _CallPiece(msgspec.Struct):
    index: int | None = None
    id: str | None = None
    function: _Function | None = None


class _Delta(msgspec.Struct):
    content: str | None = None
    tool_calls: list[_CallPiece] | None = None


class _Choice(msgspec.Struct):
    delta: _Delta | None = None
    finish_reason: str | None = None


class _ChatUsage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: _Details | None = None


class _Chunk(msgspec.Struct):
    choices: list[_Choice] | None = None
    usage: _ChatUsage | None = None
    error: _Error | None = None


class _Item(msgspec.Struct):
    type: str = ""
    call_id: str = ""
    name: str = ""
    arguments: str = ""


class _ResponsesUsage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_tokens_details: _Details | None = None


class _Response(msgspec.Struct):
    usage: _ResponsesUsage | None = None
    error: _Error | None = None


class _ResponsesEvent(msgspec.Struct):
    type: str = ""
    # Read as the kind of event says (kinds accord does not use may give these other shapes)
    delta: Any = None
    item: msgspec.Raw = msgspec.Raw()
    response: msgspec.Raw = msgspec.Raw()
    message: Any = None
    code: Any = None


_chunk = msgspec.json.Decoder(_Chunk)
_event = msgspec.json.Decoder(_ResponsesEvent)
_item = msgspec.json.Decoder(_Item)
_response = msgspec.json.Decoder(_Response)


def _decode(decoder: msgspec.json.Decoder[Any], data: bytes | msgspec.Raw, what: str) -> Any:
    try:
        return decoder.decode(data)
    except msgspec.DecodeError as exc:  # (ValidationError is one)
        raise refused(f"{what} accord cannot read ({exc})") from None


# --- the answer as it comes, bounded --------------------------------------------------------


class _Call:
    __slots__ = ("arguments", "id", "name", "size")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []
        self.size = 0


class Answer:
    """The text, tool calls and usage of one answer, each bounded as it grows."""

    __slots__ = ("calls", "filtered", "size", "text", "usage")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.size = 0
        self.calls: dict[int, _Call] = {}
        self.usage: Usage | None = None
        self.filtered = False  # a content filter ended it

    def add_text(self, piece: str) -> TextDelta:
        self.size += len(piece)
        if self.size > MAX_TEXT:
            raise refused(f"an answer of more than {MAX_TEXT} characters of text")
        self.text.append(piece)
        return TextDelta(piece)

    def call(self, index: int) -> _Call:
        found = self.calls.get(index)
        if found is None:
            if len(self.calls) >= MAX_TOOL_CALLS:
                raise refused(f"more than {MAX_TOOL_CALLS} tool calls in one answer")
            found = self.calls[index] = _Call()
        return found

    def add_to_call(self, index: int, call_id: str, name: str, arguments: str) -> None:
        found = self.call(index)
        if call_id:
            found.id = call_id
        if name:
            found.name += name
        if len(found.id) > MAX_NAME or len(found.name) > MAX_NAME:
            raise refused(f"a tool call's name or id longer than {MAX_NAME} characters")
        if arguments:
            found.size += len(arguments)
            if found.size > MAX_ARGUMENTS:
                raise refused(
                    f"tool call {found.name or index!r}: arguments longer than "
                    f"{MAX_ARGUMENTS} characters"
                )
            found.arguments.append(arguments)

    def response(self) -> ModelResponse:
        if self.filtered and not self.text and not self.calls:
            raise Failed(Failure("model_refused", "the model refused to answer (content filter)"))
        calls = (self.calls[index] for index in sorted(self.calls))
        return ModelResponse(
            text="".join(self.text),
            tool_calls=tuple(tool_call(c.id, c.name, "".join(c.arguments)) for c in calls),
            usage=self.usage,
        )


def _usage(given: int | None, taken: int | None, details: _Details | None) -> Usage:
    cached = details.cached_tokens if details is not None else None
    return Usage(input_tokens=given or 0, output_tokens=taken or 0, cached_tokens=cached or 0)


# --- the two streams ------------------------------------------------------------------------


async def chat_events(received: AsyncIterator[bytes]) -> AsyncGenerator[ModelEvent]:
    """A Chat Completions stream's events: text deltas as they come, then the response."""
    answer = Answer()
    async with aclosing(read_events(received)) as stream:
        async for events in stream:
            for event in events:
                if event.data == b"[DONE]":
                    yield answer.response()
                    return
                chunk: _Chunk = _decode(_chunk, event.data, "a chunk")
                if chunk.error is not None:
                    raise stream_failure(chunk.error)
                if chunk.usage is not None:
                    used = chunk.usage
                    answer.usage = _usage(
                        used.prompt_tokens, used.completion_tokens, used.prompt_tokens_details
                    )
                for choice in chunk.choices or ():
                    answer.filtered = answer.filtered or choice.finish_reason == "content_filter"
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        yield answer.add_text(delta.content)
                    for piece in delta.tool_calls or ():
                        _add_piece(answer, piece)
    yield answer.response()  # (a server that ends without [DONE])


def _add_piece(answer: Answer, piece: _CallPiece) -> None:
    index = piece.index
    if index is None:  # (some servers send whole calls without an index)
        known = {call.id: i for i, call in answer.calls.items()}
        if piece.id and piece.id in known:
            index = known[piece.id]
        elif piece.id or not answer.calls:
            index = max(answer.calls, default=-1) + 1
        else:
            index = max(answer.calls)
    function = piece.function
    answer.add_to_call(
        index,
        piece.id or "",
        (function.name or "") if function is not None else "",
        (function.arguments or "") if function is not None else "",
    )


async def responses_events(received: AsyncIterator[bytes]) -> AsyncGenerator[ModelEvent]:
    """A Responses API stream's events: text deltas as they come, then the response."""
    answer = Answer()
    async with aclosing(read_events(received)) as stream:
        async for events in stream:
            for event in events:
                read: _ResponsesEvent = _decode(_event, event.data, "an event")
                kind = read.type
                if kind == "response.output_text.delta":
                    if not isinstance(read.delta, str):
                        raise refused("a text delta that is not a string")
                    if read.delta:
                        yield answer.add_text(read.delta)
                elif kind == "response.output_item.done":
                    item: _Item = _decode(_item, read.item, "an output item")
                    if item.type == "function_call":
                        index = len(answer.calls)
                        answer.add_to_call(index, item.call_id, item.name, item.arguments)
                elif kind == "response.completed":
                    response: _Response = _decode(_response, read.response, "a response")
                    if response.usage is not None:
                        used = response.usage
                        answer.usage = _usage(
                            used.input_tokens, used.output_tokens, used.input_tokens_details
                        )
                elif kind == "response.failed":
                    response = _decode(_response, read.response, "a response")
                    raise stream_failure(response.error or _Error())
                elif kind == "error":
                    said, code = read.message, read.code
                    raise stream_failure(
                        _Error(
                            message=said if isinstance(said, str) else None,
                            code=code if isinstance(code, str | int) else None,
                        )
                    )
    yield answer.response()


def stream_failure(error: _Error) -> Failed:
    """What an error the endpoint sent on its stream means."""
    code = str(error.code or "")
    says = f"the response failed: {error.message or code or 'no reason given'}"
    text = (error.message or "").lower()
    if code in ("rate_limit_exceeded", "429"):
        return Failed(Failure("rate_limited", says, True))
    if code in ("server_error", "vector_store_timeout") or code.startswith("5"):
        return Failed(Failure("model_unavailable", says, True))
    if code == "context_length_exceeded" or any(words in text for words in TOO_LONG):
        return Failed(Failure("context_too_long", says))
    if code == "content_filter":
        return Failed(Failure("model_refused", says))
    return Failed(Failure("model_error", says))


__all__ = ["MAX_ARGUMENTS", "MAX_NAME", "MAX_TEXT", "MAX_TOOL_CALLS", "Failed", "refused"]
