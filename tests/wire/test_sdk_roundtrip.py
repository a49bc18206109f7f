"""Round trips against the official implementation (a2a-sdk's generated ``lf.a2a.v1`` protos).

For generated instances of every wire message: what accord encodes, protobuf's ProtoJSON
parser reads; what protobuf prints (camelCase, snake_case, or as a dict), accord reads back to
an equal value; and SDK-made JSON read by accord and encoded again parses to an equal proto.

ProtoJSON printers drop zero values and print timestamps with as few fraction digits as
needed and Struct numbers as doubles, so values are compared semantically (``canonical``).
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from a2a.types import a2a_pb2
from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wire_strategies import BY_NAME

from accord.wire import _model as w
from accord.wire import convert, decode, encode
from accord.wire._time import parse_timestamp

TIMESTAMP_FIELDS = frozenset({"timestamp", "status_timestamp_after"})
PROTO_NAMES = sorted(a2a_pb2.DESCRIPTOR.message_types_by_name)


def canonical(value: Any) -> Any:
    """A comparable form: structs as (type, fields), timestamps as epoch milliseconds."""
    if isinstance(value, msgspec.Struct):
        fields = {}
        for name in value.__struct_fields__:
            item = getattr(value, name)
            if name in TIMESTAMP_FIELDS and isinstance(item, str):
                item = parse_timestamp(item)
            fields[name] = canonical(item)
        return (type(value).__name__, fields)
    if isinstance(value, list):
        return [canonical(v) for v in value]
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    return value


def proto_class(name: str) -> type[ProtoMessage]:
    cls: type[ProtoMessage] = getattr(a2a_pb2, name)
    return cls


def test_every_proto_message_has_a_model_and_a_strategy() -> None:
    assert set(BY_NAME) == set(PROTO_NAMES)
    for name in PROTO_NAMES:
        assert issubclass(getattr(w, name), w.Wire), name


_settings = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("name", PROTO_NAMES)
@_settings
@given(data=st.data())
def test_sdk_reads_what_accord_writes(name: str, data: st.DataObject) -> None:
    original = data.draw(BY_NAME[name], label=name)
    cls = type(original)
    parsed = json_format.Parse(encode(original), proto_class(name)())

    camel = json_format.MessageToJson(parsed)
    assert canonical(decode(camel, cls)) == canonical(original)

    snake = json_format.MessageToJson(parsed, preserving_proto_field_name=True)
    assert canonical(decode(snake, cls)) == canonical(original)

    as_dict = json_format.MessageToDict(parsed)
    assert canonical(convert(as_dict, cls)) == canonical(original)


@pytest.mark.parametrize("name", PROTO_NAMES)
@_settings
@given(data=st.data())
def test_accord_reads_what_sdk_writes(name: str, data: st.DataObject) -> None:
    original = data.draw(BY_NAME[name], label=name)
    made_by_sdk = json_format.Parse(encode(original), proto_class(name)())

    # Printed the default way, with every zero value, and with enums as numbers.
    for printed in (
        json_format.MessageToJson(made_by_sdk),
        json_format.MessageToJson(made_by_sdk, always_print_fields_with_no_presence=True),
        json_format.MessageToJson(made_by_sdk, use_integers_for_enums=True),
    ):
        read = decode(printed, type(original))
        again = json_format.Parse(encode(read), proto_class(name)())
        assert again == made_by_sdk


def test_sdk_objects_built_directly_are_read() -> None:
    """A task the SDK builds itself (not parsed from accord) decodes to the expected model."""
    proto = a2a_pb2.Task(
        id="t-1",
        context_id="c-1",
        status=a2a_pb2.TaskStatus(state=a2a_pb2.TaskState.TASK_STATE_INPUT_REQUIRED),
        history=[
            a2a_pb2.Message(
                message_id="m-1",
                role=a2a_pb2.Role.ROLE_USER,
                parts=[a2a_pb2.Part(text="hello"), a2a_pb2.Part(raw=b"\x00\x01\xff")],
            )
        ],
    )
    proto.status.timestamp.FromMilliseconds(1_700_000_000_123)
    task = decode(json_format.MessageToJson(proto), w.Task)
    assert task.status.state is w.TaskState.INPUT_REQUIRED
    assert task.status.timestamp == "2023-11-14T22:13:20.123Z"
    assert task.history[0].parts[1].raw == b"\x00\x01\xff"
    assert task.history[0].role is w.Role.USER
