"""ProtoJSON encoding and decoding of the wire model.

Decoding takes camelCase (the fast path: msgspec straight from bytes) and, as ProtoJSON
requires, the proto's snake_case names too. Snake-case input is rare, so it is detected with
one cheap scan of the raw bytes for keys with an underscore, and only then routed through a
schema-aware rename, which touches field names of the model and never the free-form
``metadata`` / ``data`` values.

Every failure becomes :class:`WireError` naming the offending field path in camelCase
(``message.parts[0].text``), which the bindings turn into ``google.rpc.BadRequest`` field
violations.
"""

from __future__ import annotations

import re
import types
import typing
from functools import cache
from typing import Any, TypeVar

import msgspec

from accord.errors import AccordError
from accord.wire._model import FIELD_MARK, Wire

T = TypeVar("T")

_encoder = msgspec.json.Encoder()
_plain_decoder = msgspec.json.Decoder()


class WireError(AccordError, ValueError):
    """Input that is not a valid wire message.

    ``field`` is the camelCase path of the offending field ("" when the whole document is at
    fault); ``parse_error`` is true when the bytes are not JSON at all.
    """

    def __init__(self, description: str, field: str = "", *, parse_error: bool = False) -> None:
        super().__init__(f"{field}: {description}" if field else description)
        self.description = description
        self.field = field
        self.parse_error = parse_error


def encode(value: Any) -> bytes:
    """ProtoJSON bytes of a wire message (or of plain JSON-compatible data)."""
    return _encoder.encode(value)


def to_builtins(value: Any) -> Any:
    """The wire message as plain dicts and lists, camelCase keys, as on the wire."""
    return msgspec.to_builtins(value)


_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def _decoder(type_: type[T]) -> msgspec.json.Decoder[T]:
    decoder = _decoders.get(type_)
    if decoder is None:
        decoder = _decoders[type_] = msgspec.json.Decoder(type_)
    return decoder


def decode(data: bytes | str, type_: type[T]) -> T:
    """Decode ProtoJSON ``data`` into ``type_``; raises :class:`WireError`."""
    if isinstance(data, str):
        data = data.encode()
    if not _has_snake_names(data):
        try:
            return _decoder(type_).decode(data)
        except msgspec.ValidationError as exc:
            # msgspec reads only padded standard base64, refuses null for a field and strings
            # for integers; ProtoJSON also allows URL-safe and unpadded base64, null for "not
            # set" and integers as strings. The slow path below normalizes all three.
            text = str(exc)
            if not any(sign in text for sign in _SLOW_PATH_SIGNS):
                raise _wire_error(exc) from None
        except msgspec.DecodeError as exc:
            raise WireError(f"malformed JSON: {exc}", parse_error=True) from None
    try:
        raw = _plain_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise WireError(f"malformed JSON: {exc}", parse_error=True) from None
    return convert(raw, type_)


def convert(raw: Any, type_: type[T], *, from_strings: bool = False) -> T:
    """Build ``type_`` from already-parsed JSON (dicts and lists), camel or snake case.
    ``from_strings`` also accepts numbers and booleans written as strings (query parameters)."""
    try:
        return msgspec.convert(_camelize(raw, type_), type_, strict=not from_strings)
    except msgspec.ValidationError as exc:
        raise _wire_error(exc) from None


def decode_json(data: bytes | str) -> Any:
    """Plain JSON to Python objects; raises :class:`WireError` (parse error) when malformed."""
    try:
        return _plain_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise WireError(f"malformed JSON: {exc}", parse_error=True) from None


# --- error paths ---------------------------------------------------------------------------

_AT = re.compile(r" - at `\$(.*)`$")
_MISSING = re.compile(r"^Object missing required field `([^`]+)`")


def _wire_error(exc: msgspec.ValidationError) -> WireError:
    text = str(exc)
    path = ""
    match = _AT.search(text)
    if match:
        path = match.group(1).lstrip(".")
        text = text[: match.start()]
    missing = _MISSING.match(text)
    if missing:
        return WireError("required field is missing", _join(path, missing.group(1)))
    if text.startswith(FIELD_MARK):
        _, field, description = text.split(FIELD_MARK, 2)
        return WireError(description, _join(path, field))
    return WireError(text, path)


def _join(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


# --- snake_case input ----------------------------------------------------------------------


def _wire_types() -> list[type[Wire]]:
    found: list[type[Wire]] = []
    pending: list[type[Wire]] = [Wire]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


@cache
def _snake_names() -> frozenset[bytes]:
    """The snake_case names of the model's fields that differ from their camelCase form."""
    return frozenset(
        name.encode()
        for cls in _wire_types()
        for name in cls.__struct_fields__
        if "_" in name.strip("_")
    )


# A JSON key that could be a snake_case field name: lower-case letters and digits with an
# underscore. Possessive quantifiers: a run of name characters is read once, never again
# from a later position in it, so the scan is linear whatever the body holds.
_SNAKE_KEY = re.compile(rb'"([a-z0-9]*+_[a-z0-9_]*+)"\s*+:')


def _has_snake_names(data: bytes) -> bool:
    """True when some JSON key in ``data`` is the snake_case name of a model field.

    One regular expression in C over the body from the key holding its first underscore
    (none: the usual camelCase request, one ``memchr``); only keys that look like snake_case
    come back to Python to be looked up.
    """
    first = data.find(b"_")
    if first < 0:
        return False
    names = _snake_names()
    search = _SNAKE_KEY.search  # (a loop of searches: no generator or iterator to set up)
    key = search(data, max(data.rfind(b'"', 0, first), 0))  # from that key's opening quote
    while key is not None:
        if key[1] in names:
            return True
        key = search(data, key.end())
    return False


@cache
def _field_types(cls: type[Wire]) -> dict[str, tuple[str, Any, bool]]:
    """For each accepted input key of ``cls``: its camelCase key, its declared type, and
    whether null is a value of it (only ``google.protobuf.Value`` fields, typed ``Any``)."""
    hints = typing.get_type_hints(cls)
    table: dict[str, tuple[str, Any, bool]] = {}
    for name, camel in zip(cls.__struct_fields__, cls.__struct_encode_fields__, strict=True):
        hint = hints[name]
        keeps_null = hint is Any or Any in typing.get_args(hint)
        table[camel] = table[name] = (camel, hint, keeps_null)
    return table


_SLOW_PATH_SIGNS = ("base64", "got `null`", "Expected `int`, got `str`")
_INTEGER = re.compile(r"-?\d+")


def _standard_base64(text: str) -> str:
    """URL-safe and unpadded base64 (both valid ProtoJSON) as padded standard base64."""
    text = text.strip().replace("-", "+").replace("_", "/")
    return text + "=" * (-len(text) % 4)


def _camelize(raw: Any, type_: Any) -> Any:
    """Rename snake_case keys of model fields in ``raw`` (parsed JSON) to camelCase, drop
    fields given as null, read integers given as strings, and normalize base64."""
    origin = typing.get_origin(type_)
    if origin in (typing.Union, types.UnionType):
        for member in typing.get_args(type_):
            if member is bytes and isinstance(raw, str):
                return _standard_base64(raw)
            if member is int:
                return _camelize(raw, int)
            if isinstance(member, type) and issubclass(member, Wire):
                return _camelize(raw, member)
            if typing.get_origin(member) in (list, dict):
                return _camelize(raw, member)
        return raw
    if isinstance(type_, type) and issubclass(type_, Wire) and isinstance(raw, dict):
        table = _field_types(type_)
        out: dict[str, Any] = {}
        for key, value in raw.items():
            entry = table.get(key)
            if entry is None:
                out[key] = value  # unknown: msgspec ignores it
            else:
                camel, field_type, keeps_null = entry
                if value is None and not keeps_null:
                    continue  # ProtoJSON: null means the field is not set
                out[camel] = _camelize(value, field_type)
        return out
    if type_ is int and isinstance(raw, str) and _INTEGER.fullmatch(raw.strip()):
        return int(raw)
    if origin is list and isinstance(raw, list):
        (item,) = typing.get_args(type_)
        return [_camelize(v, item) for v in raw]
    if origin is dict and isinstance(raw, dict):
        _, item = typing.get_args(type_)
        return {k: _camelize(v, item) for k, v in raw.items()}
    return raw
