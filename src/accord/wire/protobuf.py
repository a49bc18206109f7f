"""Conversion between the msgspec wire model and accord's ``lf.a2a.v1`` protobuf messages.

Fields are copied directly, without a JSON detour (3-7x faster than going through
``json_format``; see docs/grpc.md). Model classes and proto messages share names (``Task`` ↔
``lf.a2a.v1.Task``) and field names (snake_case), so for each class one copy function per
direction is generated from the two descriptions on first use and cached; each field's copy
depends on its kind (scalar, enum, message, repeated, map, Struct, Value, Timestamp).

Presence follows the model: a field that is ``UNSET`` is left absent in the proto, and a proto
field without presence reads back as the model's default. Timestamps travel as RFC 3339 text in
the model, with microsecond precision into the proto and milliseconds back out (the model's
wire form, ``accord.wire._time``). ``google.protobuf.Value`` numbers are doubles; an integral one
reads back as ``int`` so that JSON peers see ``1``, not ``1.0``.

Reading a proto into the model validates it the way the JSON codec does and raises
:class:`accord.wire.WireError` with the camelCase path of the offending field.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypeVar, cast

import msgspec
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message as ProtoMessage

from accord.wire import _model as w
from accord.wire._codec import WireError
from accord.wire._model import FIELD_MARK, UNSET
from accord.wire._proto import a2a_pb2 as pb
from accord.wire._time import format_timestamp

__all__ = ["from_proto", "proto_class", "to_proto"]

T = TypeVar("T", bound=w.Wire)

Fill = Callable[[Any, Any], None]  # (model value, proto message to fill in place)
Read = Callable[[Any], Any]  # proto message -> model value


def to_proto(value: w.Wire) -> ProtoMessage:
    """The proto message for a wire-model value (``w.Task`` -> ``pb.Task``)."""
    message = proto_class(type(value))()
    _filler(type(value))(value, message)
    return message


def from_proto(message: ProtoMessage, type_: type[T]) -> T:
    """The wire-model value of a proto message; raises :class:`WireError` when invalid."""
    result: T = _reader(type_)(message)
    return result


@cache
def proto_class(type_: type[w.Wire]) -> type[ProtoMessage]:
    """The generated message class with the model class's name."""
    cls: type[ProtoMessage] = getattr(pb, type_.__name__)
    return cls


# --- well-known types ----------------------------------------------------------------------

_MAX_EXACT = 2**53


def _fill_value(value: Any, target: Any) -> None:
    if value is None:
        target.null_value = 0
    elif value is True or value is False:
        target.bool_value = value
    elif isinstance(value, int | float):
        target.number_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, dict):
        struct = target.struct_value
        struct.SetInParent()
        _fill_struct(value, struct)
    elif isinstance(value, list | tuple):
        values = target.list_value
        values.SetInParent()
        add = values.values.add
        for item in value:
            _fill_value(item, add())
    else:
        raise ValueError(f"not a JSON value: {type(value).__name__}")


def _fill_struct(value: dict[str, Any], target: Any) -> None:
    fields = target.fields
    for key, item in value.items():
        _fill_value(item, fields[key])


def _read_value(value: Any) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "number_value":
        number: float = value.number_value
        if number.is_integer() and -_MAX_EXACT <= number <= _MAX_EXACT:
            return int(number)
        return number
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return _read_struct(value.struct_value)
    if kind == "list_value":
        return [_read_value(item) for item in value.list_value.values]
    return None  # null_value, or a Value with nothing set


def _read_struct(struct: Any) -> dict[str, Any]:
    fields = struct.fields  # indexing beats .items(), which goes through collections.abc
    return {key: _read_value(fields[key]) for key in fields}


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _fill_timestamp(text: str, target: Any) -> None:
    value = text.strip()
    if value[-1:] in ("z", "Z"):
        value = value[:-1] + "+00:00"
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None or "T" not in value.upper():
        raise ValueError(f"not an RFC 3339 timestamp with an offset: {text!r}")
    delta = moment - _EPOCH
    target.seconds = delta.days * 86_400 + delta.seconds
    target.nanos = delta.microseconds * 1000


def _read_timestamp(timestamp: Any) -> str:
    return format_timestamp(timestamp.seconds * 1000 + timestamp.nanos // 1_000_000)


# --- plans ---------------------------------------------------------------------------------
#
# For each model class, one function per direction is generated from the two descriptions and
# compiled once (the way dataclasses builds __init__): a straight sequence of field copies runs
# about twice as fast as a loop over per-field closures. Every field's copy sits in its own
# ``try`` (free in CPython 3.11 unless something raises) so a failure names its field path.


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def _model_class(descriptor: Any) -> type[w.Wire]:
    cls: type[w.Wire] = getattr(w, descriptor.name)
    return cls


def _enum_tables(field: Any) -> tuple[dict[Any, int], dict[int, Any]]:
    enum_cls = getattr(w, field.enum_type.name)
    to_number = {member: field.enum_type.values_by_name[member.value].number for member in enum_cls}
    return to_number, {number: member for member, number in to_number.items()}


def _is_map(field: Any) -> bool:
    message_type = field.message_type
    return message_type is not None and bool(message_type.GetOptions().map_entry)


def _is_repeated(field: Any) -> bool:
    # ``is_repeated`` replaced ``label`` in newer protobuf releases; 5.x only has ``label``.
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)


_WELL_KNOWN_FILL = {
    "google.protobuf.Struct": "_fill_struct",
    "google.protobuf.Value": "_fill_value",
    "google.protobuf.Timestamp": "_fill_timestamp",
}
_WELL_KNOWN_READ = {
    "google.protobuf.Struct": "_read_struct",
    "google.protobuf.Value": "_read_value",
    "google.protobuf.Timestamp": "_read_timestamp",
}


def _compile(source: str, name: str, namespace: dict[str, Any]) -> Any:
    namespace.update(
        UNSET=UNSET,
        WireError=WireError,
        _under=_under,
        _locate_item_error=_locate_item_error,
        _post_init_error=_post_init_error,
        _fill_struct=_fill_struct,
        _fill_value=_fill_value,
        _fill_timestamp=_fill_timestamp,
        _read_struct=_read_struct,
        _read_value=_read_value,
        _read_timestamp=_read_timestamp,
    )
    exec(compile(source, f"<accord.wire.protobuf {name}>", "exec"), namespace)
    return namespace[name]


def _guard(camel: str, body: list[str]) -> list[str]:
    """``body`` (statements) inside a try that puts failures under the field ``camel``."""
    return [
        "    try:",
        *(f"    {line}" for line in body),
        "    except WireError as exc:",
        f"        raise _under(exc, {camel!r}) from None",
        "    except (ValueError, TypeError, KeyError, OverflowError) as exc:",
        f"        raise WireError(str(exc), {camel!r}) from None",
    ]


@cache
def _filler(cls: type[w.Wire]) -> Fill:
    descriptor = proto_class(cls).DESCRIPTOR
    namespace: dict[str, Any] = {}
    lines = ["def fill(value, message):"]
    for name in cls.__struct_fields__:
        field = descriptor.fields_by_name[name]
        lines += _guard(_camel(name), _fill_lines(name, field, namespace))
    return cast(Fill, _compile("\n".join(lines), "fill", namespace))


def _fill_lines(name: str, field: Any, namespace: dict[str, Any]) -> list[str]:
    """Statements copying model field ``name`` of ``value`` into ``message``."""
    get = f"    item = value.{name}"
    if _is_map(field):
        value_field = field.message_type.fields_by_name["value"]
        if value_field.message_type is None:
            return [get, "    if item:", f"        message.{name}.update(item)"]
        namespace[f"fill_{name}"] = _filler(_model_class(value_field.message_type))
        return [
            get,
            "    if item:",
            f"        target = message.{name}",
            "        for key, entry in item.items():",
            f"            fill_{name}(entry, target[key])",
        ]
    if _is_repeated(field):
        if field.message_type is None:
            return [get, "    if item:", f"        message.{name}.extend(item)"]
        namespace[f"fill_{name}"] = _filler(_model_class(field.message_type))
        return [
            get,
            "    if item:",
            f"        add = message.{name}.add",
            "        for entry in item:",
            f"            fill_{name}(entry, add())",
        ]
    if field.message_type is not None:
        helper = _WELL_KNOWN_FILL.get(field.message_type.full_name)
        if helper is None:
            helper = f"fill_{name}"
            namespace[helper] = _filler(_model_class(field.message_type))
        return [
            get,
            "    if item is not UNSET:",
            f"        target = message.{name}",
            "        target.SetInParent()",
            f"        {helper}(item, target)",
        ]
    if field.enum_type is not None:
        namespace[f"numbers_{name}"] = _enum_tables(field)[0]
        return [get, "    if item is not UNSET:", f"        message.{name} = numbers_{name}[item]"]
    if field.has_presence:  # proto3 `optional` or a oneof member: set even when zero
        return [get, "    if item is not UNSET:", f"        message.{name} = item"]
    return [get, "    if item:", f"        message.{name} = item"]


@cache
def _reader(cls: type[w.Wire]) -> Read:
    descriptor = proto_class(cls).DESCRIPTOR
    fields = msgspec.structs.fields(cls)
    required = {f.name for f in fields if f.required}
    # Scalars without presence whose model default is UNSET (Task.generation, the 1.1
    # preview's): the proto's zero reads back as UNSET, "not known", as the model wants it.
    unset_when_zero = {f.name for f in fields if f.default is UNSET}
    namespace: dict[str, Any] = {"cls": cls}
    lines = ["def read(message):", "    values = {}"]
    for name in cls.__struct_fields__:
        field = descriptor.fields_by_name[name]
        if (
            name in unset_when_zero
            and not field.has_presence
            and field.message_type is None
            and field.enum_type is None
            and not _is_repeated(field)
        ):
            lines += [f"    if message.{name}:", f"        values[{name!r}] = message.{name}"]
            continue
        lines += _read_lines(name, field, name in required, namespace)
    lines += [
        "    try:",
        "        return cls(**values)",
        "    except ValueError as exc:",
        "        raise _post_init_error(exc) from None",
    ]
    return cast(Read, _compile("\n".join(lines), "read", namespace))


def _read_lines(name: str, field: Any, required: bool, namespace: dict[str, Any]) -> list[str]:
    """Statements putting proto field ``name`` of ``message`` into ``values``."""
    camel = _camel(name)
    if _is_map(field):
        value_field = field.message_type.fields_by_name["value"]
        if value_field.message_type is None:
            return [f"    values[{name!r}] = dict(message.{name})"]
        namespace[f"read_{name}"] = _reader(_model_class(value_field.message_type))
        body = [f"    values[{name!r}] = {{k: read_{name}(v) for k, v in message.{name}.items()}}"]
        return _guard(camel, body)
    if _is_repeated(field):
        # An empty list is left to the model's default, unless the model requires the field
        # (``Message.parts``): then it is passed, and the model's own check names the error.
        check = "    if True:" if required else "    if items:"
        if field.message_type is None:
            return [f"    items = message.{name}", check, f"        values[{name!r}] = list(items)"]
        namespace[f"read_{name}"] = _reader(_model_class(field.message_type))
        return [
            f"    items = message.{name}",
            check,
            "        try:",
            f"            values[{name!r}] = [read_{name}(item) for item in items]",
            "        except WireError:",
            f"            _locate_item_error(read_{name}, items, {camel!r})",
        ]
    if field.message_type is not None:
        helper = _WELL_KNOWN_READ.get(field.message_type.full_name)
        if helper is None:
            helper = f"read_{name}"
            namespace[helper] = _reader(_model_class(field.message_type))
        lines = [
            f"    if message.HasField({name!r}):",
            *(
                f"    {line}"
                for line in _guard(camel, [f"    values[{name!r}] = {helper}(message.{name})"])
            ),
        ]
        if required:
            lines += [
                "    else:",
                f"        raise WireError('required field is missing', {camel!r})",
            ]
        return lines
    if field.enum_type is not None:
        namespace[f"members_{name}"] = _enum_tables(field)[1]
        return [
            f"    number = message.{name}",
            f"    member = members_{name}.get(number)",
            "    if member is None:",
            f"        raise WireError(f'unknown enum number {{number}}', {camel!r})",
            f"    values[{name!r}] = member",
        ]
    if field.has_presence:  # proto3 `optional` or a oneof member
        return [f"    if message.HasField({name!r}):", f"        values[{name!r}] = message.{name}"]
    return [f"    values[{name!r}] = message.{name}"]


# --- errors --------------------------------------------------------------------------------


def _under(exc: WireError, prefix: str) -> WireError:
    """``exc`` with its field path moved under ``prefix``."""
    path = f"{prefix}.{exc.field}" if exc.field else prefix
    return WireError(exc.description, path, parse_error=exc.parse_error)


def _locate_item_error(read_item: Read, items: Any, camel: str) -> list[Any]:
    """Re-read a failing repeated field item by item to name the index that fails."""
    for index, item in enumerate(items):
        try:
            read_item(item)
        except WireError as exc:
            raise _under(exc, f"{camel}[{index}]") from None
    raise AssertionError("unreachable: no item failed twice")  # pragma: no cover


def _post_init_error(exc: ValueError) -> WireError:
    text = str(exc)
    if text.startswith(FIELD_MARK):
        _, field, description = text.split(FIELD_MARK, 2)
        return WireError(description, field)
    return WireError(text)
