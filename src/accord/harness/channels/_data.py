"""The channel extension's data part (``application/vnd.tiny-harness.channel+json``).

Its JSON schema (``ChannelMessageData``, the extension's contract) is enforced exactly, with
every error naming its field (``message.parts[0].data.kind``):

- an object with no fields but ``channel_id`` and ``sender`` (strings, required), ``kind``
  (``message`` — the default —, ``help_request`` or ``help_reply``), ``text`` (a string,
  ``""`` by default), ``parts`` (an array of content parts, ``[]`` by default) and
  ``in_reply_to`` (a string or null);
- a content part is an object with ``kind`` (``text`` or ``data``, required), ``text`` (a
  string or null), ``data`` (an object or null) and ``media_type`` (a string or null); the
  schema leaves a content part's other fields open, so they are kept as sent.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from accord.contracts import json_kind
from accord.harness._wire import CHANNEL_MEDIA_TYPE
from accord.wire import UNSET, A2AError, Message, Part, invalid_params

Kind = Literal["message", "help_request", "help_reply"]
KINDS: tuple[str, ...] = ("message", "help_request", "help_reply")
CONTENT_KINDS: tuple[str, ...] = ("text", "data")
FIELDS = frozenset({"channel_id", "sender", "kind", "text", "parts", "in_reply_to"})


class ChannelData(msgspec.Struct, frozen=True, kw_only=True):
    """One channel message as the data part carries it. ``parts`` are the content parts
    as sent (checked against the schema)."""

    channel_id: str
    sender: str
    kind: Kind = "message"
    text: str = ""
    parts: tuple[dict[str, Any], ...] = ()
    in_reply_to: str | None = None

    def as_json(self) -> dict[str, Any]:
        """Every field present, as tiny-harness writes it."""
        return {
            "channel_id": self.channel_id,
            "sender": self.sender,
            "kind": self.kind,
            "text": self.text,
            "parts": [dict(part) for part in self.parts],
            "in_reply_to": self.in_reply_to,
        }

    def as_part(self) -> Part:
        return Part(data=self.as_json(), media_type=CHANNEL_MEDIA_TYPE)

    @property
    def content_text(self) -> str:
        """``text`` and the text of its text parts, one per line."""
        texts = [self.text] if self.text else []
        texts += [p["text"] for p in self.parts if p.get("kind") == "text" and p.get("text")]
        return "\n".join(texts)


def find(message: Message) -> tuple[ChannelData, int] | None:
    """The message's channel part and where it sits (None: it has none); a malformed one,
    or a second one, raises InvalidParams naming the field."""
    found: tuple[ChannelData, int] | None = None
    for index, part in enumerate(message.parts):
        if part.media_type != CHANNEL_MEDIA_TYPE:
            continue
        field = f"message.parts[{index}]"
        if found is not None:
            raise _invalid(field, "a message carries at most one channel part")
        if part.data is UNSET:
            raise _invalid(field, "a channel message is a data part")
        found = parse(part.data, f"{field}.data"), index
    return found


def of(message: Message) -> ChannelData | None:
    """The channel part of a message the harness stored (valid by then), or None."""
    for part in message.parts:
        if part.media_type == CHANNEL_MEDIA_TYPE and isinstance(part.data, dict):
            try:
                return parse(part.data, "")
            except A2AError:
                return None
    return None


def parse(data: Any, field: str) -> ChannelData:
    """``data`` checked against the schema (InvalidParams naming the first field at fault)."""
    if not isinstance(data, dict):
        raise _invalid(field, "a channel message is a JSON object")
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise _invalid(f"{field}.{unknown[0]}", "unknown field")
    for name in ("channel_id", "sender"):
        if name not in data:
            raise _invalid(f"{field}.{name}", "missing (a required string)")
        _string(data[name], f"{field}.{name}")
    kind = data.get("kind", "message")
    if kind not in KINDS:
        raise _invalid(f"{field}.kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    text = data.get("text", "")
    _string(text, f"{field}.text")
    in_reply_to = data.get("in_reply_to")
    if in_reply_to is not None:
        _string(in_reply_to, f"{field}.in_reply_to", "a string or null")
    parts = data.get("parts", [])
    if not isinstance(parts, list):
        raise _invalid(f"{field}.parts", "expected an array of content parts")
    checked = tuple(_content_part(part, f"{field}.parts[{i}]") for i, part in enumerate(parts))
    return ChannelData(
        channel_id=data["channel_id"],
        sender=data["sender"],
        kind=kind,
        text=text,
        parts=checked,
        in_reply_to=in_reply_to,
    )


def _content_part(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _invalid(field, "a content part is a JSON object")
    if "kind" not in value:
        raise _invalid(f"{field}.kind", "missing (text or data)")
    if value["kind"] not in CONTENT_KINDS:
        raise _invalid(f"{field}.kind", f"expected text or data, got {value['kind']!r}")
    for name in ("text", "media_type"):
        if value.get(name) is not None:
            _string(value[name], f"{field}.{name}", "a string or null")
    data = value.get("data")
    if data is not None and not isinstance(data, dict):
        raise _invalid(f"{field}.data", "expected a JSON object or null")
    return value


def _string(value: Any, field: str, expected: str = "a string") -> None:
    if not isinstance(value, str):
        raise _invalid(field, f"expected {expected}, got {json_kind(value)}")


def _invalid(field: str, description: str) -> A2AError:
    return invalid_params(field, f"invalid channel message: {description}")
