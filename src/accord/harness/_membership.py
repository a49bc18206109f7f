"""A conversation's participants as a client reads and changes them: the list in a task's
metadata, and the admin's task envelope that sets the list as it should be (what ``accord
participants`` and the chat's ``/invite`` send; docs/harness.md, "The event envelope")."""

from __future__ import annotations

from typing import Any, get_args

from accord.harness._wire import TASK_KEY, Kind, Role

PARTICIPANT_ROLES: tuple[str, ...] = tuple(role.value for role in Role)
PARTICIPANT_KINDS: tuple[str, ...] = get_args(Kind)


def participants_of(metadata: Any) -> list[dict[str, Any]] | None:
    """The participants a task's metadata lists (the harness's task extension), or None
    when the task is not a conversation of the harness."""
    extension = metadata.get(TASK_KEY) if isinstance(metadata, dict) else None
    found = extension.get("participants") if isinstance(extension, dict) else None
    if not isinstance(found, list):
        return None
    return [entry for entry in found if isinstance(entry, dict)]


def with_participant(
    people: list[dict[str, Any]],
    participant_id: str,
    *,
    role: str | None = None,
    kind: str | None = None,
    display_name: str | None = None,
) -> list[dict[str, Any]]:
    """``people`` with ``participant_id`` added (a human watcher unless told) or, when
    listed already, changed as told (what is not told stays)."""
    old = next((p for p in people if p.get("id") == participant_id), None) or {}
    name = display_name if display_name is not None else old.get("display_name")
    entry = {
        "id": participant_id,
        "kind": kind or old.get("kind") or "human",
        "role": role or old.get("role") or "watcher",
        "display_name": str(name or ""),
    }
    if not old:
        return [*people, entry]
    return [entry if p.get("id") == participant_id else p for p in people]


def without_participant(people: list[dict[str, Any]], participant_id: str) -> list[dict[str, Any]]:
    """``people`` without ``participant_id``; KeyError when they are not listed."""
    others = [p for p in people if p.get("id") != participant_id]
    if len(others) == len(people):
        raise KeyError(participant_id)
    return others


def participants_envelope(people: list[dict[str, Any]]) -> dict[str, Any]:
    """The admin's task envelope (the data of an event part) that sets the participants."""
    return {"kind": "task", "payload": {"participants": people}}
