"""Reading back the event ids a client was sent (``Last-Event-ID``): decimal numbers the
server issued, none larger than a signed 64-bit integer (what every store keeps)."""

from __future__ import annotations

MAX_EVENT_NUMBER = 2**63 - 1
_MAX_DIGITS = len(str(MAX_EVENT_NUMBER))


def event_number(text: str) -> int:
    """``text`` as a number from 0 to 2**63-1; ValueError for anything else.

    Only ASCII digits: ``str.isdigit`` also takes superscripts (which ``int`` refuses) and
    other scripts' digits (which ``int`` reads), and the server issued neither. At most 19 of
    them, checked before converting: ``int`` of thousands of digits is slow, and refused
    past 4,300."""
    if not (0 < len(text) <= _MAX_DIGITS and text.isascii() and text.isdigit()):
        raise ValueError(f"not a decimal number from 0 to {MAX_EVENT_NUMBER}")
    value = int(text)
    if value > MAX_EVENT_NUMBER:
        raise ValueError(f"not a decimal number from 0 to {MAX_EVENT_NUMBER}")
    return value
