"""The SSE parser, fed the way networks deliver bytes: in arbitrary chunks."""

from __future__ import annotations

import pytest

from accord.client._sse import ServerSentEvent, SSEParser


def parse(*chunks: bytes) -> list[ServerSentEvent]:
    parser = SSEParser()
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    events.extend(parser.close())
    return events


def byte_by_byte(data: bytes) -> list[ServerSentEvent]:
    return parse(*(data[i : i + 1] for i in range(len(data))))


def test_one_event_per_blank_line() -> None:
    events = parse(b'data: {"a":1}\n\ndata: {"b":2}\n\n')
    assert [e.data for e in events] == ['{"a":1}', '{"b":2}']
    assert all(e.event == "message" and e.id == "" for e in events)


def test_comments_are_ignored() -> None:
    events = parse(b": keep-alive\n\n: another\ndata: x\n: inside\n\n")
    assert [e.data for e in events] == ["x"]


def test_multi_line_data_is_joined_with_newlines() -> None:
    events = parse(b"data: first\ndata: second\ndata:\ndata: fourth\n\n")
    assert events[0].data == "first\nsecond\n\nfourth"


def test_only_one_space_after_the_colon_is_stripped() -> None:
    events = parse(b"data:no-space\n\ndata:  two spaces\n\n")
    assert [e.data for e in events] == ["no-space", " two spaces"]


def test_event_type_and_id() -> None:
    events = parse(b"event: error\nid: 7\ndata: boom\n\ndata: next\n\n")
    assert events[0] == ServerSentEvent(data="boom", event="error", id="7")
    # the last event id persists; the event type does not
    assert events[1] == ServerSentEvent(data="next", event="message", id="7")


def test_empty_id_resets_and_id_with_nul_is_ignored() -> None:
    events = parse(b"id: 3\ndata: a\n\nid: 4\x00\ndata: b\n\nid\ndata: c\n\n")
    assert [e.id for e in events] == ["3", "3", ""]


def test_retry_field() -> None:
    parser = SSEParser()
    events = parser.feed(b"retry: 2500\ndata: a\n\nretry: soon\ndata: b\n\n")
    assert events[0].retry == 2500
    assert events[1].retry is None  # not digits: ignored
    assert parser.retry == 2500


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(newline: bytes) -> None:
    data = newline.join([b"id: 1", b"data: a", b"data: b", b"", b"data: c", b"", b""])
    assert [(e.data, e.id) for e in parse(data)] == [("a\nb", "1"), ("c", "1")]
    assert [(e.data, e.id) for e in byte_by_byte(data)] == [("a\nb", "1"), ("c", "1")]


def test_crlf_split_across_chunks_is_one_line_break() -> None:
    events = parse(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n")
    assert [e.data for e in events] == ["a\nb"]


def test_last_event_without_trailing_blank_line_is_delivered_at_close() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: one\n\ndata: last\n") == [ServerSentEvent("one")]
    assert parser.close() == [ServerSentEvent("last")]


def test_last_line_without_any_line_break_is_delivered_at_close() -> None:
    assert [e.data for e in parse(b"data: one\n\ndata: tail")] == ["one", "tail"]


def test_block_without_data_dispatches_nothing() -> None:
    assert parse(b"event: ping\n\nid: 9\n\n") == []


def test_utf8_split_across_chunks_and_bom() -> None:
    data = "\ufeffdata: héllo ✓\n\n".encode()
    assert [e.data for e in byte_by_byte(data)] == ["héllo ✓"]


def test_unknown_fields_and_lines_without_colon() -> None:
    events = parse(b"foo: bar\ndata\ndata: x\n\n")
    assert events[0].data == "\nx"  # a bare "data" line is a data field with an empty value


def test_jsonrpc_frames_as_the_sdk_sends_them() -> None:
    body = (
        b'data: {"result": {"task": {"id": "t"}}, "id": "s1", "jsonrpc": "2.0"}\r\n\r\n'
        b'data: {"result": {"statusUpdate": {}}, "id": "s1", "jsonrpc": "2.0"}\r\n\r\n'
    )
    events = parse(body[:37], body[37:90], body[90:])
    assert len(events) == 2
    assert events[0].data.startswith('{"result": {"task"')
