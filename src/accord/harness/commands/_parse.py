"""Telling a command from an ordinary message.

A message is a command when its only part is text ``/<name> <arguments>`` and ``name`` is
registered; anything else, an unregistered ``/name`` included, is an ordinary message (the
model gets it).
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass

from accord.wire import Message

_COMMAND = re.compile(r"/([a-z][a-z0-9-]*)(?:\s+(.*))?", re.DOTALL)


@dataclass(frozen=True, slots=True)
class CommandCall:
    name: str
    arguments: str = ""  # the text after the name


def parse_text(text: str, names: Container[str]) -> CommandCall | None:
    match = _COMMAND.fullmatch(text)
    if match is None or match.group(1) not in names:
        return None
    return CommandCall(match.group(1), match.group(2) or "")


def parse_command(message: Message, names: Container[str]) -> CommandCall | None:
    """The command ``message`` is, or None for an ordinary message."""
    if len(message.parts) != 1:
        return None
    text = message.parts[0].text
    return parse_text(text, names) if isinstance(text, str) else None
