"""Backoff of stream resumption."""

from __future__ import annotations

from accord.client import ResumePolicy


def test_backoff_doubles_up_to_the_cap() -> None:
    policy = ResumePolicy(initial_delay=0.5, max_delay=3.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]


def test_server_retry_hint_replaces_the_initial_delay() -> None:
    policy = ResumePolicy(initial_delay=0.5, max_delay=10.0)
    assert policy.delay(1, server_retry_ms=2000) == 2.0
    assert policy.delay(2, server_retry_ms=2000) == 4.0
    assert policy.delay(9, server_retry_ms=2000) == 10.0
