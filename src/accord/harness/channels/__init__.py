"""Channels, help requests and replies: the channel extension v1 (docs/harness.md).

The names below are imported when first used: the harness's own modules reach this package's
modules directly, and loading them all with the package would go round in a circle."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accord.harness.channels._peer import channel_message, reply
    from accord.harness.channels._tool import ask_participant_call

_WHERE = {
    "ask_participant_call": "accord.harness.channels._tool",
    "channel_message": "accord.harness.channels._peer",
    "reply": "accord.harness.channels._peer",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'accord.harness.channels' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "ask_participant_call",
    "channel_message",
    "reply",
]
