"""The turn journal's entries: what a turn records in its task's log before it acts on it.

Each entry is one of three shapes, told apart by ``kind`` (a tagged union), each with the
turn's key (``turn``: the id of the message that started it), the first step of its stretch
(``from``) and the shape's ``version``:

- ``model`` (:class:`ModelAnswered`): a model call's answer — its ``step``, how many of the
  task's messages it ``seen``, its ``text``, ``tool_calls`` and ``usage``;
- ``tool-start`` (:class:`ToolStarted`): a tool that is not idempotent is about to run;
- ``tool-result`` (:class:`ToolFinished`): a tool call's result.

The engine keeps them as an agent's records (plain JSON objects, ``TaskHandle.journal``); they
are encoded with :func:`encode` and read back with :func:`decode`. Entries written before
they had a version carry none: they are version 1, the shapes as they are. An entry of a
newer version, or of a kind this accord does not know, is a :class:`JournalError` naming it:
a turn is never resumed from a journal it cannot read whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from accord.errors import AccordError
from accord.harness._transcript import ToolCall
from accord.harness.models import ModelResponse, Usage

VERSION = 1  # the entries' shapes as this accord writes them; an entry without one: 1


class JournalError(AccordError):
    """A journal entry this accord cannot read (a newer version, an unknown kind, a field of
    the wrong type); the message names what and why."""


class JournalCall(msgspec.Struct, frozen=True):
    """A tool call a model answer asked for."""

    id: str
    name: str
    arguments: dict[str, Any] = {}


class _Entry(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    turn: str = ""  # the turn's key
    first_step: int = msgspec.field(default=0, name="from")  # the first step of its stretch
    version: int = VERSION


class ModelAnswered(_Entry, frozen=True, kw_only=True, tag="model"):
    step: int
    seen: int = 0  # the task's messages the call was asked with
    text: str = ""
    tool_calls: list[JournalCall] = []
    usage: Usage | None = None

    def response(self) -> ModelResponse:
        return ModelResponse(
            text=self.text,
            tool_calls=tuple(ToolCall(c.name, dict(c.arguments), c.id) for c in self.tool_calls),
            usage=self.usage,
        )


class ToolStarted(_Entry, frozen=True, kw_only=True, tag="tool-start"):
    call_id: str
    name: str = ""


class ToolFinished(_Entry, frozen=True, kw_only=True, tag="tool-result"):
    call_id: str
    name: str = ""
    content: str = ""
    error: bool = False


JournalEntry = ModelAnswered | ToolStarted | ToolFinished
KINDS = ("model", "tool-start", "tool-result")


def encode(entry: JournalEntry) -> dict[str, Any]:
    """The entry as the engine records it (a JSON object)."""
    data: dict[str, Any] = msgspec.to_builtins(entry)
    return data


def decode(data: Mapping[str, Any]) -> JournalEntry:
    """The entry a recorded JSON object holds; JournalError when this accord cannot read it."""
    version = data.get("version", 1)
    if type(version) is not int or version < 1:
        raise JournalError(f"a journal entry with the version {version!r}, which is none")
    if version > VERSION:
        raise JournalError(
            f"a journal entry of version {version} (kind {data.get('kind')!r}): this accord "
            f"reads versions up to {VERSION}; a newer accord wrote it"
        )
    kind = data.get("kind")
    if kind not in KINDS:
        raise JournalError(
            f"a journal entry of the unknown kind {kind!r} (this accord knows {', '.join(KINDS)})"
        )
    try:
        entry: JournalEntry = msgspec.convert(data, JournalEntry)
    except msgspec.ValidationError as exc:
        raise JournalError(f"a journal entry of kind {kind!r} that cannot be read: {exc}") from None
    return entry
