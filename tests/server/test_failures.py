"""Unexpected exceptions are logged with a traceback once per cause; the rest of that cause
are counted and reported in one line per interval, so a repeated bad input cannot flood the
log."""

from __future__ import annotations

import logging

import pytest

from accord.server._failures import FailureLog

log = logging.getLogger("test.failures")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fail(failures: FailureLog, exc: Exception, what: str = "request") -> None:
    try:
        raise exc
    except Exception:
        failures.exception(log, "%s failed", what)


def fail_elsewhere(failures: FailureLog) -> None:
    try:
        raise ValueError("another line")
    except Exception:
        failures.exception(log, "%s failed", "request")


def test_one_traceback_per_cause_then_a_count_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="test.failures")
    clock = Clock()
    failures = FailureLog(interval_s=60, clock=clock)
    for _ in range(100):
        fail(failures, ValueError("x"))
    assert len(caplog.records) == 1
    first = caplog.records[0]
    assert first.exc_info is not None and first.getMessage().startswith("request failed [")
    assert "ValueError" in first.getMessage()

    clock.now += 61
    fail(failures, ValueError("x"))  # the interval passed: one line with the count
    summary = caplog.records[-1]
    assert len(caplog.records) == 2 and summary.exc_info is None
    assert "100 more of ValueError" in summary.getMessage()

    fail(failures, ValueError("x"))  # the count starts again, silently
    assert len(caplog.records) == 2


def test_each_distinct_cause_gets_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="test.failures")
    failures = FailureLog(clock=Clock())
    fail(failures, ValueError("x"))
    fail(failures, KeyError("k"))  # another type, same line
    fail_elsewhere(failures)  # same type, another line
    fail(failures, ValueError("y"))  # same type and line: a cause already traced
    assert [r.exc_info is not None for r in caplog.records] == [True, True, True]


def test_causes_past_the_bound_share_one_untraced_count(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="test.failures")
    clock = Clock()
    failures = FailureLog(interval_s=60, max_causes=1, clock=clock)
    fail(failures, ValueError("x"))
    fail(failures, KeyError("k"))  # a new cause, no room: one line, no traceback
    fail(failures, TypeError("t"))  # counted with it
    assert [r.exc_info is not None for r in caplog.records] == [True, False]
    assert "other causes" in caplog.records[-1].getMessage()
