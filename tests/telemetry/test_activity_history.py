"""The last hour of the server's metrics the dashboard's Activity page draws: samples every
interval, at most an hour of them, rates and p50/p99 from what moved between two samples."""

from __future__ import annotations

import asyncio

import pytest

from accord.telemetry import ActivityHistory, RequestMetrics
from accord.telemetry._history import quantile
from accord.telemetry._metrics import LATENCY_BUCKETS

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_points_are_rates_and_latencies_of_what_happened_between_samples() -> None:
    clock, metrics = Clock(), RequestMetrics()
    history = ActivityHistory(metrics, interval_s=10, window_s=60, clock=clock)
    send = metrics.stats("jsonrpc", "SendMessage")
    get = metrics.stats("rest", "GetTask", "acme")
    for _ in range(20):
        send.done("ok", 0.004)
    send.done("TaskNotFoundError", 0.2)
    clock.now += 10
    history.sample()
    for _ in range(5):
        get.done("ok", 0.0007)
    clock.now += 5  # (the point from the last sample to now)
    first, now = history.points()
    assert first["requests"] == pytest.approx(2.1) and first["errors"] == pytest.approx(0.1)
    assert set(first["latency"]) == {"SendMessage"}
    send_latency = first["latency"]["SendMessage"]
    assert send_latency["n"] == 21
    assert 0.0025 < send_latency["p50"] <= 0.005  # within its bucket
    assert 0.1 < send_latency["p99"] <= 0.25
    assert now["partial"] and now["requests"] == pytest.approx(1.0)
    assert set(now["latency"]) == {"GetTask"} and first["model"] is None


def test_an_hour_is_kept_and_no_more() -> None:
    clock = Clock()
    history = ActivityHistory(RequestMetrics(), interval_s=10, window_s=60, clock=clock)
    for _ in range(100):
        clock.now += 10
        history.sample()
    assert len(history.samples) == 7
    assert len(history.points()) == 6  # (no partial one: the last sample is now)


def test_quantiles_read_the_buckets_as_prometheus_does() -> None:
    buckets = [0] * (len(LATENCY_BUCKETS) + 1)
    assert quantile(0.5, buckets) is None
    buckets[1] = 10  # ten values in (0.0005, 0.001]
    assert quantile(0.5, buckets) == pytest.approx(0.00075)
    buckets[-1] = 1  # one above every bound
    assert quantile(0.99, buckets) == LATENCY_BUCKETS[-1]


async def test_the_sampler_wakes_whoever_waits_for_the_next_point() -> None:
    metrics = RequestMetrics()
    history = ActivityHistory(metrics, interval_s=0.05, window_s=1)
    assert history.latest() is None
    sampler = asyncio.create_task(history.run())
    try:
        metrics.stats("rest", "GetTask").done("ok", 0.001)
        assert await history.next_sample(5.0)
        latest = history.latest()
        assert latest is not None and latest["latency"]["GetTask"]["n"] == 1
        assert not await history.next_sample(0.0)
    finally:
        sampler.cancel()
