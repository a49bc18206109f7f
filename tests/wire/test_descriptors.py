"""The model against the official ``lf.a2a.v1`` descriptors (a2a-sdk's generated protos), so
a field renamed, added or re-marked upstream shows up here as a failure."""

from __future__ import annotations

import msgspec
import pytest
from a2a.types import a2a_pb2
from google.api import field_behavior_pb2  # type: ignore[import-untyped]
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from accord.wire import _model as w

MESSAGES: dict[str, Descriptor] = dict(a2a_pb2.DESCRIPTOR.message_types_by_name)

# REQUIRED fields the model decodes without: their zero value is valid and ProtoJSON writers
# omit zero values, so requiring them would reject a peer's empty last page; and a card
# without ``capabilities`` is read as declaring none.
LENIENT_REQUIRED = {
    ("ListTasksResponse", "nextPageToken"),
    ("ListTasksResponse", "pageSize"),
    ("ListTasksResponse", "totalSize"),
    ("AgentCard", "capabilities"),
}
# REQUIRED repeated fields the model enforces as non-empty (checklist §7); the others
# (card skills, scopes, tags …) are read as they come.
NON_EMPTY_REPEATED = {("Message", "parts"), ("Artifact", "parts")}


def _required(field: FieldDescriptor) -> bool:
    behaviors = field.GetOptions().Extensions[field_behavior_pb2.field_behavior]
    return field_behavior_pb2.FieldBehavior.REQUIRED in behaviors


def _model(name: str) -> type[msgspec.Struct]:
    cls = getattr(w, name, None)
    assert isinstance(cls, type), f"lf.a2a.v1.{name} has no model"
    assert issubclass(cls, w.Wire)
    return cls


def _fields(name: str) -> dict[str, msgspec.structs.FieldInfo]:
    return {f.encode_name: f for f in msgspec.structs.fields(_model(name))}


# The A2A 1.1 preview's fields (docs/preview-1.1.md): in the model, not in the 1.0 protos.
PREVIEW_1_1 = {
    "Task": {"generation"},
    "TaskStatusUpdateEvent": {"generation"},
    "TaskArtifactUpdateEvent": {"generation"},
    "GetTaskRequest": {"currentGeneration"},
    "SendMessageConfiguration": {"ifGenerationMatch"},
}


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_json_names_match(name: str) -> None:
    expected = {field.json_name for field in MESSAGES[name].fields}
    preview = PREVIEW_1_1.get(name, set())
    assert set(_model(name).__struct_encode_fields__) == expected | preview
    assert not preview & expected


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_required_and_presence_match(name: str) -> None:
    ours = _fields(name)
    for field in MESSAGES[name].fields:
        info = ours[field.json_name]
        key = (name, field.json_name)
        if field.is_repeated:
            assert info.required == (key in NON_EMPTY_REPEATED), key
            continue
        if _required(field) and key not in LENIENT_REQUIRED:
            assert info.required, f"{key} is REQUIRED upstream"
            continue
        assert not info.required, f"{key} is not REQUIRED upstream"
        if field.has_presence and key not in LENIENT_REQUIRED:
            # ``optional`` scalars, oneof members and message fields keep presence.
            assert info.default is w.UNSET, f"{key} must default to UNSET (presence)"
        else:
            assert info.default is not w.UNSET, f"{key} has no presence upstream"


WITH_ONEOF = sorted(
    name
    for name, descriptor in MESSAGES.items()
    if any(not o.name.startswith("_") for o in descriptor.oneofs)
)


def test_oneof_messages_are_the_known_ones() -> None:
    assert WITH_ONEOF == [
        "OAuthFlows",
        "Part",
        "SecurityScheme",
        "SendMessageResponse",
        "StreamResponse",
    ]


@pytest.mark.parametrize("name", WITH_ONEOF)
def test_real_oneofs_are_enforced(name: str) -> None:
    (oneof,) = [o for o in MESSAGES[name].oneofs if not o.name.startswith("_")]
    members = [f.json_name for f in oneof.fields]
    model = _model(name)
    if name == "Part":
        assert [f.encode_name for f in msgspec.structs.fields(model)][:4] == members
        return
    assert issubclass(model, w._Oneof)
    assert [w._camel(f) for f in model._oneof] == members


@pytest.mark.parametrize(
    ("ours", "theirs"), [(w.TaskState, "TaskState"), (w.Role, "Role")], ids=["TaskState", "Role"]
)
def test_enum_names_and_numbers_match(ours: type[w.TaskState | w.Role], theirs: str) -> None:
    values = a2a_pb2.DESCRIPTOR.enum_types_by_name[theirs].values
    assert [member.value for member in ours] == [v.name for v in values]
    assert [v.number for v in values] == list(range(len(values)))
