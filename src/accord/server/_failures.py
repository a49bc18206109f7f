"""Logging unexpected exceptions without letting one cause flood the log.

Anyone who finds an input that trips a bug can send it thousands of times a second, and a
traceback each time buries everything else (and fills the disk). So the first failure of each
distinct cause — the exception's type and the line that raised it — is logged with its
traceback; later ones of the same cause are counted and reported in one line, without a
traceback, at most once per ``interval_s`` (on the first failure after the interval has
passed). Past ``max_causes`` distinct causes, new ones share one counter and get no traceback.

Every "unexpected exception" site of the bindings and the HTTP front logs through
:func:`log_unexpected`, so they share one budget.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

Cause = tuple[str, str, int]  # exception type, file, line where it was raised

_OTHER: Cause = ("other causes", "", 0)


@dataclass(slots=True)
class _Seen:
    reported_at: float
    suppressed: int = 0


class FailureLog:
    """Rate-limited ``logger.exception``: a traceback once per cause, then counts."""

    def __init__(
        self,
        interval_s: float = 60.0,
        max_causes: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_s = interval_s
        self.max_causes = max_causes
        self.clock = clock
        self._seen: dict[Cause, _Seen] = {}

    def exception(self, logger: logging.Logger, message: str, *args: object) -> None:
        """Log the exception being handled (call it in an ``except`` block)."""
        cause = cause_of(sys.exc_info()[1])
        now = self.clock()
        seen = self._seen.get(cause)
        if seen is None and len(self._seen) < self.max_causes:
            self._seen[cause] = _Seen(now)
            logger.error(
                message + " [%s at %s:%d; more of this cause are counted, not traced]",
                *args,
                *cause,
                exc_info=True,
            )
            return
        if seen is None:
            seen = self._seen.setdefault(_OTHER, _Seen(now - self.interval_s))
            cause = _OTHER
        seen.suppressed += 1
        if now - seen.reported_at >= self.interval_s:
            logger.error(
                message + " [%d more of %s at %s:%d in the last %.0f s; traceback logged once]",
                *args,
                seen.suppressed,
                *cause,
                now - seen.reported_at,
            )
            seen.suppressed = 0
            seen.reported_at = now


def cause_of(exc: BaseException | None) -> Cause:
    if exc is None:
        return ("no exception", "", 0)
    tb = exc.__traceback__
    if tb is None:
        return (type(exc).__qualname__, "", 0)
    while tb.tb_next is not None:
        tb = tb.tb_next
    return (type(exc).__qualname__, tb.tb_frame.f_code.co_filename, tb.tb_lineno)


_FAILURES = FailureLog()


def log_unexpected(logger: logging.Logger, message: str, *args: object) -> None:
    """Log the exception being handled through the process-wide :class:`FailureLog`."""
    _FAILURES.exception(logger, message, *args)
