"""accord reads an OpenAI-compatible stream itself (accord.harness.models._sse and
_openai_stream): the SSE reader alone, then both APIs over real HTTP against the fake server
sending what a test wrote — text, tool calls split across chunks, usage, the endpoint's
errors (before the stream and on it), and what is refused: an oversize line, too many tool
calls, arguments over their bound, a stream stalled mid-way (one cut mid-way:
test_openai_models.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.harness.fake_openai import FakeOpenAI, Reply
from tests.harness.model_clients import model_client, openai_client

from accord.harness._transcript import Conversation, Entry, ToolCall
from accord.harness._wire import Participant, Role, TaskExtension
from accord.harness.models import ModelError, ModelResponse, TextDelta, Usage
from accord.harness.models._openai_compatible import OpenAIModel, Retry
from accord.harness.models._openai_stream import MAX_ARGUMENTS, MAX_TOOL_CALLS
from accord.harness.models._sse import MAX_LINE, Event, SSEError, SSEReader
from accord.wire._model import Task, TaskState, TaskStatus

pytestmark = pytest.mark.unit

APIS = ["chat", "responses"]
ONCE = Retry(attempts=1)
__all__ = ["model_client"]  # (the autouse fixture: every test here runs over both clients)

# --- the SSE reader ---------------------------------------------------------------------------


def read_all(pieces: list[bytes], max_line: int = MAX_LINE) -> list[Event]:
    reader = SSEReader(max_line)
    events = [event for piece in pieces for event in reader.feed(piece)]
    return events + reader.end()


STREAM = (
    b": keep-alive\r\n"
    b"event: response.output_text.delta\r\n"
    b'data: {"a":\r\n'
    b"data:  1}\r\n"
    b"id: 7\r\nretry: 100\r\n"
    b"\r\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [Event(b'{"a":\n 1}', "response.output_text.delta"), Event(b"[DONE]")]


def test_the_reader_reads_events_whole_however_the_reads_split_them() -> None:
    assert read_all([STREAM]) == EXPECTED
    assert read_all([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED
    for cut in range(len(STREAM)):
        assert read_all([STREAM[:cut], STREAM[cut:]]) == EXPECTED


def test_the_reader_takes_lf_crlf_and_cr_line_ends_and_skips_comments() -> None:
    for end in (b"\n", b"\r\n", b"\r"):
        lines = [b":comment", b"data: x", b"", b":another", b"", b"data:y", b"", b""]
        assert read_all([end.join(lines)]) == [Event(b"x"), Event(b"y")]
    # a CR that ends one read and the LF that begins the next are one line end
    assert read_all([b"data: x\r", b"\n\r", b"\n"]) == [Event(b"x")]


def test_the_reader_refuses_a_line_over_its_bound_even_before_it_ends() -> None:
    assert read_all([b"data: " + b"x" * 94 + b"\n\n"], max_line=100) == [Event(b"x" * 94)]
    with pytest.raises(SSEError, match="longer than 100 bytes"):
        read_all([b"data: " + b"x" * 95 + b"\n\n"], max_line=100)
    reader = SSEReader(100)
    with pytest.raises(SSEError, match="longer than 100 bytes"):
        for _ in range(20):  # a line that never ends
            reader.feed(b"x" * 10)
    with pytest.raises(SSEError, match="event's data longer than 100 bytes"):
        read_all([b"data: " + b"x" * 60 + b"\n" + b"data: " + b"y" * 60 + b"\n\n"], max_line=100)


def test_the_reader_refuses_a_stream_that_ends_inside_an_event() -> None:
    assert read_all([b"data: x\n\n", b": bye"]) == [Event(b"x")]
    with pytest.raises(SSEError, match="ended inside an event"):
        read_all([b"data: x\n\ndata: half"])


# --- both APIs over HTTP ----------------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def model(fake: FakeOpenAI, api: str, retry: Retry = ONCE, timeout: float = 30) -> OpenAIModel:
    client = openai_client(fake.base_url, timeout=timeout)
    return OpenAIModel("fake-model", client, api=api, retry=retry)  # type: ignore[arg-type]


def conversation() -> Conversation:
    extension = TaskExtension(
        name="offsite",
        goal="a plan",
        participants=(Participant(id="alice", kind="human", role=Role.REPORTER),),
    )
    return Conversation(
        task=Task(id="t1", status=TaskStatus(state=TaskState.WORKING)),
        extension=extension,
        agent_id="accord",
        entries=(Entry("alice", "user", "plan it"),),
        model_calls=0,
        system_prompt="Be brief.",
    )


async def events_of(chosen: OpenAIModel) -> list[Any]:
    return [event async for event in chosen.stream(conversation())]


async def failure_of(chosen: OpenAIModel, seen: list[Any] | None = None) -> ModelError:
    with pytest.raises(ModelError) as failed:
        async for event in chosen.stream(conversation()):
            if seen is not None:
                seen.append(event)
    return failed.value


def data(value: Any, event: str = "") -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(value)}\n\n".encode()


def chat(delta: dict[str, Any], finish: str | None = None, **more: Any) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return data({"id": "c", "object": "chat.completion.chunk", "choices": [choice], **more})


def piece(index: int, call_id: str | None, name: str | None, arguments: str) -> bytes:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    call: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        call["id"] = call_id
    return chat({"tool_calls": [call]})


def responses(kind: str, **fields: Any) -> bytes:
    return data({"type": kind, **fields}, kind)


def function_call(call_id: str, name: str, arguments: str) -> bytes:
    item = {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
    return responses("response.output_item.done", item=item)


CHAT_USAGE = data(
    {
        "choices": [],
        "usage": {
            "prompt_tokens": 30,
            "completion_tokens": 4,
            "prompt_tokens_details": {"cached_tokens": 20},
        },
    }
)
DONE = b"data: [DONE]\n\n"


async def test_chat_tool_calls_split_across_chunks_and_reads_come_back_whole(
    fake: FakeOpenAI,
) -> None:
    stream = b"".join(
        [
            b": a keep-alive comment\n\n",
            chat({"role": "assistant", "content": ""}),
            chat({"content": "Two "}),
            piece(0, "call_a", "get_", '{"id": '),
            piece(1, "call_b", "weigh", "{}"),
            piece(0, None, "order", "48213}"),
            chat({"content": "days."}),
            chat({}, "tool_calls"),
            CHAT_USAGE,
            DONE,
        ]
    )
    # Written in reads that cut lines and events anywhere (CRLF, as some servers end lines)
    stream = stream.replace(b"\n", b"\r\n")
    fake.replies.append(Reply(raw=[stream[i : i + 7] for i in range(0, len(stream), 7)]))
    events = await events_of(model(fake, "chat"))
    assert events == [
        TextDelta("Two "),
        TextDelta("days."),
        ModelResponse(
            text="Two days.",
            tool_calls=(
                ToolCall(name="get_order", arguments={"id": 48213}, id="call_a"),
                ToolCall(name="weigh", arguments={}, id="call_b"),
            ),
            usage=Usage(input_tokens=30, output_tokens=4, cached_tokens=20),
        ),
    ]
    [sent] = fake.requests  # the body accord built, as it built it
    assert sent["messages"][0]["content"].startswith("Be brief.")
    assert sent["stream_options"] == {"include_usage": True}


async def test_responses_text_tool_calls_and_usage(fake: FakeOpenAI) -> None:
    usage = {"input_tokens": 9, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 0}}
    fake.replies.append(
        Reply(
            raw=[
                responses("response.created", response={"id": "r"}),
                responses("response.output_text.delta", delta="Hi"),
                responses("response.reasoning_summary_part.added", part={"type": "x"}),
                # (a kind accord does not read, its fields of other shapes: skipped)
                responses("response.other.done", code={"x": 1}, message=[1], delta=2),
                function_call("call_1", "weigh", '{"kg": 2}'),
                responses("response.completed", response={"usage": usage}),
            ]
        )
    )
    events = await events_of(model(fake, "responses"))
    assert events == [
        TextDelta("Hi"),
        ModelResponse(
            text="Hi",
            tool_calls=(ToolCall(name="weigh", arguments={"kg": 2}, id="call_1"),),
            usage=Usage(input_tokens=9, output_tokens=3),
        ),
    ]


@pytest.mark.parametrize(
    ("reply", "reason", "says"),
    [
        (Reply(status=429, retry_after=0), "rate_limited", "HTTP 429"),
        (Reply(status=503), "model_unavailable", "HTTP 503"),
        (Reply(status=400, error="maximum context length is 8192"), "context_too_long", "8192"),
        (
            Reply(status=400, error="filtered by the content management policy"),
            "model_refused",
            "content management",
        ),
        (Reply(status=404, error="no such model"), "model_error", "HTTP 404"),
    ],
)
@pytest.mark.parametrize("api", APIS)
async def test_error_statuses_keep_their_kind(
    fake: FakeOpenAI, api: str, reply: Reply, reason: str, says: str
) -> None:
    fake.replies.append(reply)
    failed = await failure_of(model(fake, api))
    assert failed.reason == reason and says in failed.detail


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ({"message": "slow down", "code": "rate_limit_exceeded"}, "rate_limited"),
        ({"message": "oops", "code": "server_error"}, "model_unavailable"),
        ({"message": "too long", "code": "context_length_exceeded"}, "context_too_long"),
        ({"message": "bad request", "code": 400, "type": "BadRequestError"}, "model_error"),
    ],
)
@pytest.mark.parametrize("api", APIS)
async def test_an_error_sent_on_the_stream_keeps_its_kind(
    fake: FakeOpenAI, api: str, error: dict[str, Any], reason: str
) -> None:
    if api == "chat":
        raw = [chat({"content": "a"}), data({"error": error})]
    else:
        said = {key: value for key, value in error.items() if key != "type"}
        raw = [responses("response.output_text.delta", delta="a"), responses("error", **said)]
    fake.replies.append(Reply(raw=raw))
    seen: list[Any] = []
    failed = await failure_of(model(fake, api, Retry(attempts=3, base_s=0.01)), seen)
    assert seen == [TextDelta("a")]
    assert failed.reason == reason
    assert error["message"] in failed.detail and "not asked again" in failed.detail
    assert len(fake.requests) == 1


async def test_a_failed_response_event_says_why(fake: FakeOpenAI) -> None:
    error = {"code": "context_length_exceeded", "message": "input too long"}
    fake.replies.append(Reply(raw=[responses("response.failed", response={"error": error})]))
    failed = await failure_of(model(fake, "responses"))
    assert failed.reason == "context_too_long" and "input too long" in failed.detail


async def test_a_content_filter_with_nothing_said_is_a_refusal(fake: FakeOpenAI) -> None:
    fake.replies.append(Reply(raw=[chat({}, "content_filter"), DONE]))
    failed = await failure_of(model(fake, "chat"))
    assert failed.reason == "model_refused" and "content filter" in failed.detail


@pytest.mark.parametrize("api", APIS)
async def test_an_oversize_line_is_refused(fake: FakeOpenAI, api: str) -> None:
    huge = "x" * MAX_LINE
    text = chat({"content": huge}) if api == "chat" else responses("x", delta=huge)
    fake.replies.append(Reply(raw=[text[i : i + 65536] for i in range(0, len(text), 65536)]))
    failed = await failure_of(model(fake, api))
    assert failed.reason == "model_error"
    assert f"event-stream line longer than {MAX_LINE} bytes" in failed.detail


@pytest.mark.parametrize("api", APIS)
async def test_too_many_tool_calls_are_refused(fake: FakeOpenAI, api: str) -> None:
    if api == "chat":
        calls = [piece(i, f"c{i}", "weigh", "{}") for i in range(MAX_TOOL_CALLS + 1)]
    else:
        calls = [function_call(f"c{i}", "weigh", "{}") for i in range(MAX_TOOL_CALLS + 1)]
    fake.replies.append(Reply(raw=calls))
    failed = await failure_of(model(fake, api))
    assert failed.reason == "model_error"
    assert f"more than {MAX_TOOL_CALLS} tool calls in one answer" in failed.detail
    fake.replies.append(Reply(raw=calls[:MAX_TOOL_CALLS] + [DONE] * (api == "chat")))
    assert len((await events_of(model(fake, api)))[-1].tool_calls) == MAX_TOOL_CALLS


async def test_arguments_over_their_bound_are_refused_across_chunks(fake: FakeOpenAI) -> None:
    part = "x" * (MAX_ARGUMENTS // 4)
    pieces = [piece(0, "c", "weigh", part), *[piece(0, None, None, part) for _ in range(3)]]
    fake.replies.append(Reply(raw=[*pieces, piece(0, None, None, "y"), DONE]))
    failed = await failure_of(model(fake, "chat"))
    assert f"tool call 'weigh': arguments longer than {MAX_ARGUMENTS}" in failed.detail
    fake.replies.append(Reply(raw=[*pieces, DONE]))
    [call] = (await events_of(model(fake, "chat")))[-1].tool_calls
    assert call.arguments == {"_raw": part * 4}  # (not JSON: the tool refuses it)


@pytest.mark.parametrize("api", APIS)
async def test_a_chunk_that_is_not_the_api_is_refused_saying_what(
    fake: FakeOpenAI, api: str
) -> None:
    fake.replies.append(Reply(raw=[data({"choices": [{"delta": {"content": 7}}]})]))
    if api == "responses":
        fake.replies[0] = Reply(raw=[b"data: {not json\n\n"])
    failed = await failure_of(model(fake, api))
    assert failed.reason == "model_error"
    assert "accord cannot read" in failed.detail


async def test_a_stream_that_ends_inside_an_event_is_a_broken_one(fake: FakeOpenAI) -> None:
    fake.replies.append(Reply(raw=[chat({"content": "a"}), b'data: {"choi']))
    seen: list[Any] = []
    failed = await failure_of(model(fake, "chat"), seen)
    assert seen == [TextDelta("a")]
    assert failed.reason == "model_unavailable"
    assert "the stream broke: the event stream ended inside an event" in failed.detail


@pytest.mark.parametrize("api", APIS)
async def test_a_stream_that_stalls_past_the_timeout_fails(fake: FakeOpenAI, api: str) -> None:
    first = (
        chat({"content": "a"})
        if api == "chat"
        else responses("response.output_text.delta", delta="a")
    )
    fake.replies.append(Reply(raw=[first, first], pause_s=5))  # the client waits 0.3 s
    seen: list[Any] = []
    failed = await failure_of(model(fake, api, timeout=0.3), seen)
    assert seen == [TextDelta("a")]
    assert failed.reason == "model_unavailable"
    assert "the stream stalled: nothing came within the timeout" in failed.detail
