"""Wire model <-> protobuf conversion (accord.wire.protobuf)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import wire_strategies as ws
from a2a.types import a2a_pb2 as official
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.wire import WireError, parse_timestamp
from accord.wire import _codec as codec
from accord.wire import _model as w
from accord.wire._proto import a2a_pb2 as pb
from accord.wire.protobuf import from_proto, to_proto

# Every message a method of A2AService takes or returns, plus the pieces they are built from.
SERVICE_TYPES = [
    "SendMessageRequest",
    "SendMessageResponse",
    "StreamResponse",
    "GetTaskRequest",
    "Task",
    "ListTasksRequest",
    "ListTasksResponse",
    "CancelTaskRequest",
    "SubscribeToTaskRequest",
    "TaskPushNotificationConfig",
    "GetTaskPushNotificationConfigRequest",
    "ListTaskPushNotificationConfigsRequest",
    "ListTaskPushNotificationConfigsResponse",
    "DeleteTaskPushNotificationConfigRequest",
    "GetExtendedAgentCardRequest",
    "AgentCard",
]

TIMESTAMP_KEYS = {"timestamp", "statusTimestampAfter"}

_settings = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_service_types_cover_every_method() -> None:
    methods = pb.DESCRIPTOR.services_by_name["A2AService"].methods
    used = {m.input_type.name for m in methods} | {m.output_type.name for m in methods}
    assert used - {"Empty"} <= set(SERVICE_TYPES)


@pytest.mark.parametrize("name", sorted(ws.BY_NAME))
@given(data=st.data())
@_settings
def test_round_trip(name: str, data: st.DataObject) -> None:
    value = data.draw(ws.BY_NAME[name])
    message = to_proto(value)
    assert type(message).DESCRIPTOR.full_name == f"lf.a2a.v1.{name}"
    back = from_proto(pb_class(name).FromString(message.SerializeToString()), type(value))
    assert back == value


@pytest.mark.parametrize("name", SERVICE_TYPES)
@given(data=st.data())
@_settings
def test_official_sdk_reads_the_same_json(name: str, data: st.DataObject) -> None:
    """Our proto bytes, parsed by the official schema and printed as ProtoJSON, decode to
    the value we started from: the conversion agrees with the JSON bindings."""
    value = data.draw(ws.BY_NAME[name])
    theirs = getattr(official, name).FromString(to_proto(value).SerializeToString())
    as_json = json_format.MessageToDict(theirs)
    assert _normalize(codec.convert(as_json, type(value))) == _normalize(value)


def _normalize(value: Any) -> Any:
    """Plain data with integral floats as ints and timestamps as epoch milliseconds: ProtoJSON
    printers differ on ``1`` vs ``1.0`` and on printing a zero fraction of a second."""

    def fix(item: Any, key: str = "") -> Any:
        if isinstance(item, float) and item.is_integer() and abs(item) <= 2**53:
            return int(item)
        if key in TIMESTAMP_KEYS and isinstance(item, str):
            return parse_timestamp(item)
        if isinstance(item, dict):
            return {k: fix(v, k) for k, v in item.items()}
        if isinstance(item, list):
            return [fix(v) for v in item]
        return item

    return fix(msgspec.to_builtins(value))


def pb_class(name: str) -> Any:
    return getattr(pb, name)


def _message(**changes: Any) -> w.Message:
    fields: dict[str, Any] = {
        "message_id": "m1",
        "role": w.Role.USER,
        "parts": [w.Part(text="hi")],
    }
    fields.update(changes)
    return w.Message(**fields)


def test_presence_survives() -> None:
    request = w.GetTaskRequest(id="t1", history_length=0)
    message = to_proto(request)
    assert message.HasField("history_length")
    assert from_proto(message, w.GetTaskRequest).history_length == 0
    unset = to_proto(w.GetTaskRequest(id="t1"))
    assert not unset.HasField("history_length")
    assert from_proto(unset, w.GetTaskRequest).history_length is w.UNSET


def test_empty_text_part_and_null_data_are_kept() -> None:
    msg = _message(parts=[w.Part(text=""), w.Part(data=None), w.Part(data={"a": [1, 2.5]})])
    back = from_proto(to_proto(msg), w.Message)
    assert back.parts[0].text == ""
    assert back.parts[1].data is None
    assert back.parts[2].data == {"a": [1, 2.5]}
    assert type(back.parts[2].data["a"][0]) is int


def test_timestamps_keep_microseconds_into_proto_and_offsets_are_honoured() -> None:
    request = w.ListTasksRequest(status_timestamp_after="2026-01-02T03:04:05.123456+01:00")
    proto = to_proto(request)
    assert proto.status_timestamp_after.ToJsonString() == "2026-01-02T02:04:05.123456Z"
    back = from_proto(proto, w.ListTasksRequest)
    assert back.status_timestamp_after == "2026-01-02T02:04:05.123Z"


def test_missing_required_message_names_the_field() -> None:
    with pytest.raises(WireError) as caught:
        from_proto(pb.SendMessageRequest(tenant="x"), w.SendMessageRequest)
    assert caught.value.field == "message"


def test_invalid_nested_item_names_its_path() -> None:
    request = pb.SendMessageRequest()
    request.message.message_id = "m1"
    request.message.role = pb.ROLE_USER
    request.message.parts.add(text="fine")
    request.message.parts.add(filename="no content")
    with pytest.raises(WireError) as caught:
        from_proto(request, w.SendMessageRequest)
    assert caught.value.field == "message.parts[1].content"


def test_message_without_parts_names_parts() -> None:
    message = pb.Message(message_id="m1", role=pb.ROLE_USER)
    with pytest.raises(WireError) as caught:
        from_proto(message, w.Message)
    assert caught.value.field == "parts"


def test_unspecified_role_and_unknown_enum_number_are_rejected() -> None:
    message = pb.Message(message_id="m1")
    message.parts.add(text="x")
    with pytest.raises(WireError) as caught:
        from_proto(message, w.Message)
    assert caught.value.field == "role"
    status = pb.TaskStatus()
    status.state = 42  # proto3 enums are open: unknown numbers arrive intact
    with pytest.raises(WireError) as caught:
        from_proto(status, w.TaskStatus)
    assert caught.value.field == "state"
    assert "42" in caught.value.description


def test_empty_oneof_wrapper_is_rejected() -> None:
    with pytest.raises(WireError) as caught:
        from_proto(pb.StreamResponse(), w.StreamResponse)
    assert caught.value.field == "payload"


def test_bad_timestamp_in_model_names_the_field() -> None:
    request = w.ListTasksRequest(status_timestamp_after="yesterday")
    with pytest.raises(WireError) as caught:
        to_proto(request)
    assert caught.value.field == "statusTimestampAfter"


@pytest.mark.parametrize("name", SERVICE_TYPES)
@given(data=st.data())
@_settings
def test_reading_official_bytes_matches_the_json_codec(name: str, data: st.DataObject) -> None:
    """What an official client sends: its proto (built from ProtoJSON by its own json_format)
    decodes here to what the JSON bindings decode from the same JSON."""
    value = data.draw(ws.BY_NAME[name])
    as_json = codec.encode(value)
    theirs = json_format.Parse(as_json, getattr(official, name)())
    ours = from_proto(pb_class(name).FromString(theirs.SerializeToString()), type(value))
    assert _normalize(ours) == _normalize(codec.decode(as_json, type(value)))


def test_a_number_beyond_a_double_names_its_field() -> None:
    message = _message(metadata={"huge": 10**400})
    with pytest.raises(WireError) as caught:
        to_proto(message)
    assert caught.value.field == "metadata"
