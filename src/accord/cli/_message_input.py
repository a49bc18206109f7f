"""The message ``accord send`` and ``accord stream`` build from their arguments.

Parts, in this order: the text (``TEXT``, or ``-`` for standard input), one data part per
``--data JSON``, one file part per ``--file PATH`` (its bytes, its name, the media type its
extension suggests). ``--metadata JSON`` (an object) becomes the message's metadata.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

import click

from accord.media import FileError, file_part
from accord.wire import UNSET, Message, Part, Role

STDIN = "-"
DATA_MEDIA_TYPE = "application/json"


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
    files: tuple[str, ...] = (),
    metadata: str | None = None,
    context_id: str = "",
    task_id: str = "",
) -> Message:
    parts: list[Part] = []
    if text is not None:
        parts.append(Part(text=_text(text)))
    parts.extend(Part(data=_json(value, "--data"), media_type=DATA_MEDIA_TYPE) for value in data)
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
