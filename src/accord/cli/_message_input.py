"""The message ``accord send`` and ``accord stream`` build from their arguments.

Parts, in this order: the text (``TEXT``, or ``-`` for standard input), the harness's brief
when ``--participant ID[:ROLE]`` names participants of a new conversation, one data part per
``--data JSON`` (of media type ``--data-media-type``, ``application/json`` unless told), one
file part per ``--file PATH`` (its bytes, its name, the media type its extension suggests).
``--metadata JSON`` (an object) becomes the message's metadata.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

import click

from accord.harness import EVENT_MEDIA_TYPE
from accord.harness import PARTICIPANT_KINDS as KINDS
from accord.harness import PARTICIPANT_ROLES as ROLES
from accord.media import FileError, file_part
from accord.wire import UNSET, Message, Part, Role

STDIN = "-"
DATA_MEDIA_TYPE = "application/json"
UNKNOWN_MEDIA_TYPE = "application/octet-stream"
BRIEF_NAME_CHARS = 80  # a brief's name, from the text's first line


def parse_participant(value: str, flag: str = "--participant") -> dict[str, str]:
    """``ID``, ``ID:ROLE`` or ``ID:ROLE:KIND`` as the harness's participant entry (a watcher
    and a human unless told; an id may itself hold colons: only known roles and kinds are
    taken off its end)."""
    pieces = value.split(":")
    kind = "human"
    if len(pieces) > 2 and pieces[-1] in KINDS and pieces[-2] in ROLES:
        kind = pieces.pop()
    role = "watcher"
    if len(pieces) > 1 and pieces[-1] in ROLES:
        role = pieces.pop()
    elif len(pieces) > 1 and pieces[-1] and pieces[-1].isalpha() and pieces[-1].islower():
        raise click.BadParameter(
            f"unknown role {pieces[-1]!r} in {value!r} (one of {', '.join(ROLES)})",
            param_hint=flag,
        )
    identity = ":".join(pieces)
    if not identity.strip():
        raise click.BadParameter(f"expected ID[:ROLE], got {value!r}", param_hint=flag)
    return {"id": identity, "kind": kind, "role": role}


def brief_part(text: str | None, participants: list[dict[str, str]]) -> Part:
    """The harness's brief of a new conversation with these participants: its name is the
    text's first line (shortened), its goal the text."""
    said = (text or "").strip()
    first = said.splitlines()[0].strip() if said else ""
    name = first[:BRIEF_NAME_CHARS] or "a conversation"
    payload = {"name": name, "goal": said or name, "participants": participants}
    return Part(data={"kind": "task", "payload": payload}, media_type=EVENT_MEDIA_TYPE)


def _json(value: str, flag: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON ({exc})", param_hint=flag) from None


def _text(text: str) -> str:
    if text != STDIN:
        return text
    # `echo hi | accord send URL -` means "hi", not "hi\n".
    return sys.stdin.read().removesuffix("\n")


def _file_part(path: str) -> Part:
    try:
        return file_part(path)
    except FileError as error:
        raise click.BadParameter(str(error), param_hint="--file") from None


def build_message(
    text: str | None,
    *,
    data: tuple[str, ...] = (),
    data_media_type: str = DATA_MEDIA_TYPE,
    participants: tuple[str, ...] = (),
    files: tuple[str, ...] = (),
    metadata: str | None = None,
    context_id: str = "",
    task_id: str = "",
) -> Message:
    parts: list[Part] = []
    said = _text(text) if text is not None else None
    if said is not None:
        parts.append(Part(text=said))
    if participants:
        if task_id:
            raise click.UsageError(
                "--participant briefs a new conversation; to add someone to task "
                f"{task_id}, use: accord participants add URL {task_id} ID --role ROLE"
            )
        people = [parse_participant(value) for value in participants]
        seen = [person["id"] for person in people]
        twice = sorted({identity for identity in seen if seen.count(identity) > 1})
        if twice:
            raise click.BadParameter(f"named twice: {', '.join(twice)}", param_hint="--participant")
        parts.append(brief_part(said, people))
    parts.extend(Part(data=_json(value, "--data"), media_type=data_media_type) for value in data)
    parts.extend(_file_part(path) for path in files)
    if not parts:
        raise click.UsageError(
            "nothing to send: give TEXT (- reads standard input), --data or --file"
        )
    meta: Any = UNSET
    if metadata is not None:
        meta = _json(metadata, "--metadata")
        if not isinstance(meta, dict):
            raise click.BadParameter("expected a JSON object", param_hint="--metadata")
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.USER,
        parts=parts,
        context_id=context_id,
        task_id=task_id,
        metadata=meta,
    )
