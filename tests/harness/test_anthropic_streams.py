"""accord reads a Messages API stream itself (accord.harness.models._anthropic_stream, over the
SSE reader of _sse): over real HTTP against the fake server sending the bytes a test wrote —
text, a tool_use input split across input_json_delta pieces, usage, in-stream errors with
their kinds, events of types accord does not know, and what is refused: an oversize line, too
many tool calls, a stream cut or stalled; one connection for several calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.harness.fake_anthropic import FakeAnthropic, Reply
from tests.harness.model_clients import anthropic_client, model_client
from tests.harness.test_openai_streams import conversation

from accord.harness._transcript import ToolCall
from accord.harness.models import AnthropicModel, ModelError, ModelResponse, Retry, TextDelta, Usage
from accord.harness.models._openai_stream import MAX_TOOL_CALLS
from accord.harness.models._sse import MAX_LINE

pytestmark = pytest.mark.unit
ONCE = Retry(attempts=1)
__all__ = ["model_client"]  # (the autouse fixture: every test here runs over both clients)


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def model(fake: FakeAnthropic, retry: Retry = ONCE, timeout: float = 30) -> AnthropicModel:
    client = anthropic_client(fake.base_url, timeout=timeout)
    return AnthropicModel("claude-fake", client, retry=retry)


def event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


START = event("message_start", message={"usage": {"input_tokens": 12, "output_tokens": 1}})
STOP = event("message_stop")


def text(index: int, piece: str) -> bytes:
    return event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})


def tool(index: int, call_id: str, name: str) -> bytes:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return event("content_block_start", index=index, content_block=block)


def json_piece(index: int, piece: str) -> bytes:
    delta = {"type": "input_json_delta", "partial_json": piece}
    return event("content_block_delta", index=index, delta=delta)


def ended(stop: str = "end_turn", out: int = 9) -> bytes:
    delta = {"stop_reason": stop, "stop_sequence": None}
    return event("message_delta", delta=delta, usage={"output_tokens": out})


async def events_of(chosen: AnthropicModel) -> list[Any]:
    return [e async for e in chosen.stream(conversation())]


async def failure_of(chosen: AnthropicModel, seen: list[Any] | None = None) -> ModelError:
    with pytest.raises(ModelError) as failed:
        async for e in chosen.stream(conversation()):
            if seen is not None:
                seen.append(e)
    return failed.value


async def test_text_a_split_tool_input_usage_and_unknown_events(fake: FakeAnthropic) -> None:
    stream = b"".join(
        [
            START,
            event("ping"),
            event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            text(0, "Two "),
            text(0, "days."),
            event("content_block_stop", index=0),
            tool(1, "toolu_1", "get_order"),
            json_piece(1, ""),
            json_piece(1, '{"id": 48'),
            json_piece(1, "213}"),
            event("content_block_stop", index=1),
            # (a type the API may add later, and a block of an unknown type: skipped)
            event("a_future_event", index=7, stuff=[1, 2]),
            event("content_block_start", index=2, content_block={"type": "future_block"}),
            event("content_block_delta", index=2, delta={"type": "future_delta", "x": 1}),
            ended("tool_use", 9),
            STOP,
        ]
    ).replace(b"\n", b"\r\n")
    fake.replies.append(Reply(raw=[stream[i : i + 7] for i in range(0, len(stream), 7)]))
    events = await events_of(model(fake))
    assert events == [
        TextDelta("Two "),
        TextDelta("days."),
        ModelResponse(
            text="Two days.",
            tool_calls=(ToolCall("get_order", {"id": 48213}, "toolu_1"),),
            usage=Usage(input_tokens=12, output_tokens=9),
        ),
    ]
    [sent] = fake.requests  # the body accord built, as it built it
    assert sent["max_tokens"] == 8192 and sent["messages"][0]["role"] == "user"


@pytest.mark.parametrize(
    ("kind", "message", "reason"),
    [
        ("overloaded_error", "Overloaded", "model_unavailable"),
        ("rate_limit_error", "slow down", "rate_limited"),
        ("invalid_request_error", "prompt is too long: 9 > 8", "context_too_long"),
        ("api_error", "oops", "model_unavailable"),
        ("permission_error", "no", "model_error"),
    ],
)
async def test_an_error_event_keeps_its_kind(
    fake: FakeAnthropic, kind: str, message: str, reason: str
) -> None:
    opened = event("content_block_start", index=0, content_block={"type": "text", "text": ""})
    error = event("error", error={"type": kind, "message": message})
    fake.replies.append(Reply(raw=[START, opened, text(0, "a"), error]))
    seen: list[Any] = []
    failed = await failure_of(model(fake, Retry(attempts=3, base_s=0.01)), seen)
    assert seen == [TextDelta("a")]
    assert failed.reason == reason
    assert message in failed.detail and "not asked again" in failed.detail
    assert len(fake.requests) == 1


async def test_an_oversize_line_is_refused(fake: FakeAnthropic) -> None:
    huge = text(0, "x" * MAX_LINE)
    pieces = [huge[i : i + 65536] for i in range(0, len(huge), 65536)]
    fake.replies.append(Reply(raw=[START, *pieces]))
    failed = await failure_of(model(fake))
    assert failed.reason == "model_error"
    assert f"event-stream line longer than {MAX_LINE} bytes" in failed.detail


async def test_too_many_tool_calls_are_refused(fake: FakeAnthropic) -> None:
    calls = [tool(i, f"toolu_{i}", "weigh") for i in range(MAX_TOOL_CALLS + 1)]
    fake.replies.append(Reply(raw=[START, *calls, ended("tool_use"), STOP]))
    failed = await failure_of(model(fake))
    assert failed.reason == "model_error"
    assert f"more than {MAX_TOOL_CALLS} tool calls in one answer" in failed.detail
    fake.replies.append(Reply(raw=[START, *calls[:MAX_TOOL_CALLS], ended("tool_use"), STOP]))
    assert len((await events_of(model(fake)))[-1].tool_calls) == MAX_TOOL_CALLS


async def test_a_cut_stream_is_unavailable(fake: FakeAnthropic) -> None:
    opened = event("content_block_start", index=0, content_block={"type": "text", "text": ""})
    fake.replies.append(Reply(raw=[START, opened, text(0, "a"), b'data: {"type": "conte']))
    seen: list[Any] = []
    failed = await failure_of(model(fake), seen)
    assert seen == [TextDelta("a")]
    assert failed.reason == "model_unavailable"
    assert "the stream broke: the event stream ended inside an event" in failed.detail


async def test_a_stalled_stream_fails(fake: FakeAnthropic) -> None:
    opened = event("content_block_start", index=0, content_block={"type": "text", "text": ""})
    fake.replies.append(Reply(raw=[START + opened + text(0, "a"), text(0, "b")], pause_s=5))
    seen: list[Any] = []
    failed = await failure_of(model(fake, timeout=0.3), seen)
    assert seen == [TextDelta("a")]
    assert failed.reason == "model_unavailable"
    assert "the stream stalled: nothing came within the timeout" in failed.detail


async def test_one_connection_serves_several_calls(fake: FakeAnthropic) -> None:
    chosen = model(fake)
    for _ in range(3):
        fake.replies.append(Reply(["hi"]))
        assert (await events_of(chosen))[-1].text == "hi"
    assert len(fake.peers) == 3 and len(set(fake.peers)) == 1
