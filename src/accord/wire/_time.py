"""Timestamps on the wire: RFC 3339 in UTC with milliseconds and ``Z``.

The core never reads the clock; callers pass times in as epoch milliseconds, and this module
turns them into the wire form and back.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# Formatting the date and time costs far more than the milliseconds, and a busy server stamps
# many events within the same second: keep the last second's prefix.
# One tuple, replaced whole, so threads never see a second with another second's prefix.
_last: tuple[int, str | None] = (-1, None)
# And the last text whole: the moves of one request mostly share their millisecond, and
# is_canonical knows that text without matching it.
_last_text: tuple[int, str | None] = (-1, None)  # (None: no text is ever that one)

_CANONICAL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def format_timestamp(epoch_ms: int) -> str:
    """``2026-11-29T15:31:56.123Z`` for the given epoch milliseconds."""
    global _last, _last_text
    cached_ms, cached = _last_text
    if epoch_ms == cached_ms and cached is not None:
        return cached
    seconds, millis = divmod(epoch_ms, 1000)
    cached_second, prefix = _last
    if seconds != cached_second or prefix is None:
        prefix = f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%dT%H:%M:%S}."
        _last = (seconds, prefix)
    text = f"{prefix}{millis:03d}Z"
    _last_text = (epoch_ms, text)
    return text


def is_canonical(text: str) -> bool:
    """True when ``text`` is in the one form :func:`format_timestamp` writes."""
    return text is _last_text[1] or _CANONICAL.fullmatch(text) is not None


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds of an RFC 3339 timestamp (any offset, any fraction); ValueError."""
    value = text.strip()
    if not value or "T" not in value.upper():
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    if value[-1] in "zZ":
        value = value[:-1] + "+00:00"
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"timestamp needs a UTC offset or Z: {text!r}")
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
