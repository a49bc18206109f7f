"""accord's lf.a2a.v1 schema is wire-compatible with the official one.

Our generated module lives in a private descriptor pool (see accord/wire/_proto_pool.py), so it can
be imported next to the official SDK's module, which uses the default pool; both are loaded
here and compared descriptor by descriptor.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from a2a.types import a2a_pb2 as official
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FileDescriptor

from accord.wire._proto import a2a_pb2 as ours

ROOT = Path(__file__).resolve().parents[2]
FieldKey = tuple[Any, ...]


def _file_proto(descriptor: FileDescriptor) -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto()
    descriptor.CopyToProto(proto)
    return proto


def _messages(file: FileDescriptor) -> dict[str, Descriptor]:
    """Every message of the file by full name, nested ones (map entries) included."""
    found: dict[str, Descriptor] = {}
    pending = list(file.message_types_by_name.values())
    while pending:
        message = pending.pop()
        found[message.full_name] = message
        pending.extend(message.nested_types)
    return found


# The A2A 1.1 preview's fields (the specification's dev-1.1 branch, docs/preview-1.1.md): in
# accord's schema, with the branch's numbers, and not (yet) in the official 1.0 one.
PREVIEW_1_1 = {
    "lf.a2a.v1.Task": {"generation": 7},
    "lf.a2a.v1.TaskStatusUpdateEvent": {"generation": 5},
    "lf.a2a.v1.TaskArtifactUpdateEvent": {"generation": 7},
    "lf.a2a.v1.GetTaskRequest": {"current_generation": 4},
    "lf.a2a.v1.SendMessageConfiguration": {"if_generation_match": 5},
}


def _fields(message: Descriptor, skip: dict[str, int] | None = None) -> dict[str, FieldKey]:
    out: dict[str, FieldKey] = {}
    for field in message.fields:
        if skip and field.name in skip:
            assert field.number == skip[field.name]
            continue
        oneof = field.containing_oneof
        out[field.name] = (
            field.number,
            field.json_name,
            field.type,
            field.cpp_type,
            field.message_type.full_name if field.message_type else None,
            field.enum_type.full_name if field.enum_type else None,
            field.is_repeated if hasattr(field, "is_repeated") else field.label,
            # A synthetic oneof is how proto3 `optional` is represented; real ones by name.
            oneof.name if oneof is not None else None,
            field.has_presence,
            message.GetOptions().map_entry,
        )
    return out


def test_same_package_and_message_names() -> None:
    assert ours.DESCRIPTOR.package == official.DESCRIPTOR.package == "lf.a2a.v1"
    assert set(_messages(ours.DESCRIPTOR)) == set(_messages(official.DESCRIPTOR))


@pytest.mark.parametrize("name", sorted(_messages(official.DESCRIPTOR)))
def test_message_fields_match(name: str) -> None:
    theirs = _messages(official.DESCRIPTOR)[name]
    mine = _messages(ours.DESCRIPTOR)[name]
    preview = PREVIEW_1_1.get(name, {})
    assert _fields(mine, preview) == _fields(theirs)
    assert [o.name for o in mine.oneofs if o.name.lstrip("_") not in preview] == [
        o.name for o in theirs.oneofs
    ]


def test_the_preview_fields_are_the_dev_1_1_branch_s() -> None:
    for name, fields in PREVIEW_1_1.items():
        message = _messages(ours.DESCRIPTOR)[name]
        for field, number in fields.items():
            assert message.fields_by_name[field].number == number
            assert message.fields_by_name[field].type == message.fields_by_name[field].TYPE_INT64
            assert field not in _messages(official.DESCRIPTOR)[name].fields_by_name


def test_proto3_optional_fields_match() -> None:
    def optionals(file: FileDescriptor) -> set[str]:
        proto = _file_proto(file)
        return {
            f"{m.name}.{f.name}" for m in proto.message_type for f in m.field if f.proto3_optional
        }

    preview = {"GetTaskRequest.current_generation", "SendMessageConfiguration.if_generation_match"}
    assert optionals(ours.DESCRIPTOR) - preview == optionals(official.DESCRIPTOR)
    assert "GetTaskRequest.history_length" in optionals(ours.DESCRIPTOR)


def test_enums_match() -> None:
    def enums(file: FileDescriptor) -> dict[str, list[tuple[str, int]]]:
        return {
            name: [(v.name, v.number) for v in enum.values]
            for name, enum in file.enum_types_by_name.items()
        }

    assert enums(ours.DESCRIPTOR) == enums(official.DESCRIPTOR)


def test_service_methods_match() -> None:
    def methods(file: FileDescriptor) -> dict[str, tuple[str, str, bool, bool]]:
        proto = _file_proto(file)
        (service,) = [s for s in proto.service if s.name == "A2AService"]
        return {
            m.name: (m.input_type, m.output_type, m.client_streaming, m.server_streaming)
            for m in service.method
        }

    mine = methods(ours.DESCRIPTOR)
    assert mine == methods(official.DESCRIPTOR)
    assert len(mine) == 11
    assert ours.DESCRIPTOR.services_by_name["A2AService"].full_name == "lf.a2a.v1.A2AService"


def test_bytes_cross_decode() -> None:
    """A message serialized by one side parses to the same fields on the other."""
    task = ours.Task(id="t1", context_id="c1")
    task.status.state = ours.TASK_STATE_INPUT_REQUIRED
    task.status.timestamp.FromMilliseconds(1_700_000_000_123)
    task.metadata.update({"k": [1, "two", None, {"x": True}]})
    part = task.history.add(message_id="m1", role=ours.ROLE_USER).parts.add(text="hi")
    part.metadata.update({"p": 1})
    theirs = official.Task.FromString(task.SerializeToString())
    assert theirs.status.state == official.TASK_STATE_INPUT_REQUIRED
    assert theirs.history[0].parts[0].text == "hi"
    assert ours.Task.FromString(theirs.SerializeToString()) == task


def test_generated_code_matches_proto_file(tmp_path: Path) -> None:
    """The checked-in modules were regenerated after the last edit of the .proto."""
    grpc_tools = pytest.importorskip("grpc_tools")
    from grpc_tools import protoc

    include = Path(grpc_tools.__file__).parent / "_proto"
    out = tmp_path / "set.pb"
    status = protoc.main(
        [
            "protoc",
            f"-I{ROOT / 'proto'}",
            f"-I{include}",
            f"--descriptor_set_out={out}",
            "lf/a2a/v1/a2a.proto",
        ]
    )
    assert status == 0
    compiled = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]
    checked_in = descriptor_pb2.FileDescriptorProto.FromString(ours.DESCRIPTOR.serialized_pb)
    _drop_json_names(compiled)  # protoc's descriptor sets spell them out, gencode does not
    assert compiled == checked_in


def _drop_json_names(file: descriptor_pb2.FileDescriptorProto) -> None:
    pending = list(file.message_type)
    while pending:
        message = pending.pop()
        for field in message.field:
            field.ClearField("json_name")
        pending.extend(message.nested_type)


@pytest.mark.parametrize(
    "order",
    [
        ("a2a.types.a2a_pb2", "accord.wire._proto.a2a_pb2_grpc"),
        ("accord.wire._proto.a2a_pb2_grpc", "a2a.types.a2a_pb2_grpc"),
    ],
)
@pytest.mark.processes
def test_both_schemas_import_in_one_process(order: tuple[str, str]) -> None:
    code = "import importlib, sys\nfor name in sys.argv[1:]: importlib.import_module(name)\n"
    done = subprocess.run(
        [sys.executable, "-c", code, *order], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
