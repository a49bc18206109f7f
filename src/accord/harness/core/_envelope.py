"""The event envelope: the one data part of media type ``EVENT_MEDIA_TYPE`` a message may
carry to brief or update a task (``kind`` task), to report a participant's own status or
artifact (``status_update`` / ``artifact_update``), or to complete the task (``control``).

Its shape is closed: a ``control`` carries an ``action`` and nothing else, every other kind a
``payload`` object and no ``action``. Anything else is InvalidParams naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from accord.harness._wire import EVENT_MEDIA_TYPE
from accord.wire import UNSET, A2AError, Message, invalid_params

EnvelopeKind = Literal["task", "status_update", "artifact_update", "control"]
KINDS: tuple[str, ...] = ("task", "status_update", "artifact_update", "control")
ACTIONS: tuple[str, ...] = ("complete",)


@dataclass(frozen=True, slots=True)
class Envelope:
    kind: EnvelopeKind
    payload: dict[str, Any]  # {} for a control
    action: str  # "" unless a control
    part_index: int  # where it sits in the message, for errors about its payload

    @property
    def field(self) -> str:
        return f"message.parts[{self.part_index}].data"


def find(message: Message) -> Envelope | None:
    """The message's envelope, None when it carries none; a malformed one raises."""
    found: Envelope | None = None
    for index, part in enumerate(message.parts):
        if part.media_type != EVENT_MEDIA_TYPE:
            continue
        field = f"message.parts[{index}]"
        if found is not None:
            raise _invalid(field, "a message carries at most one event envelope")
        if part.data is UNSET:
            raise _invalid(field, "an event envelope is a data part")
        found = parse(part.data, index)
    return found


def parse(data: Any, index: int) -> Envelope:
    field = f"message.parts[{index}].data"
    if not isinstance(data, dict):
        raise _invalid(field, "an event envelope is a JSON object")
    unknown = sorted(set(data) - {"kind", "payload", "action"})
    if unknown:
        raise _invalid(f"{field}.{unknown[0]}", "unknown field")
    kind = data.get("kind")
    if kind not in KINDS:
        raise _invalid(f"{field}.kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    if kind == "control":
        if "payload" in data:
            raise _invalid(f"{field}.payload", "a control envelope carries no payload")
        action = data.get("action")
        if action not in ACTIONS:
            raise _invalid(
                f"{field}.action", f"expected one of {', '.join(ACTIONS)}, got {action!r}"
            )
        return Envelope("control", {}, action, index)
    if "action" in data:
        raise _invalid(f"{field}.action", f"a {kind} envelope carries no action")
    payload = data.get("payload")
    if not isinstance(payload, dict):
        raise _invalid(f"{field}.payload", f"a {kind} envelope carries a payload object")
    return Envelope(kind, payload, "", index)


def without(message: Message, envelope: Envelope) -> list[Any]:
    """The message's other parts (the envelope has done its work)."""
    return [part for i, part in enumerate(message.parts) if i != envelope.part_index]


def _invalid(field: str, description: str) -> A2AError:
    return invalid_params(field, f"invalid event envelope: {description}")
