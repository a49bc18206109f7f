"""Backoff of stream resumption and of requests sent again."""

from __future__ import annotations

from accord.client import ResumePolicy, RetryPolicy


def test_backoff_doubles_up_to_the_cap() -> None:
    policy = ResumePolicy(initial_delay=0.5, max_delay=3.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]


def test_server_retry_hint_replaces_the_initial_delay() -> None:
    policy = ResumePolicy(initial_delay=0.5, max_delay=10.0)
    assert policy.delay(1, server_retry_ms=2000) == 2.0
    assert policy.delay(2, server_retry_ms=2000) == 4.0
    assert policy.delay(9, server_retry_ms=2000) == 10.0


def test_a_retry_waits_as_long_as_the_server_asks_within_bounds() -> None:
    policy = RetryPolicy(max_attempts=3, initial_delay=0.1, max_delay=2.0, max_retry_after=30)
    assert policy.wait(1) == 0.1
    assert policy.wait(1, retry_after=1.0) == 1.0  # the server's Retry-After, not 0.1
    assert policy.wait(3, retry_after=0.0) == 0.4  # never sooner than the backoff
    assert policy.wait(4, retry_after=1.0) is None  # attempts are bounded
    assert policy.wait(1, retry_after=31.0) is None  # and so is the wait
    assert RetryPolicy(max_attempts=0).wait(1) is None
