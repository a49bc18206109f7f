"""Channels, help requests and replies: the channel extension v1 (docs/harness.md).

The names below are imported when first used: the harness's own modules reach this package's
modules directly, and loading them all with the package would go round in a circle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from accord.harness import _lazy

if TYPE_CHECKING:
    from accord.harness.channels._peer import channel_message, reply
    from accord.harness.channels._tool import ask_participant_call

_WHERE = {
    "ask_participant_call": "accord.harness.channels._tool",
    "channel_message": "accord.harness.channels._peer",
    "reply": "accord.harness.channels._peer",
}


__getattr__ = _lazy.exports(__name__, _WHERE)


__all__ = [
    "ask_participant_call",
    "channel_message",
    "reply",
]
