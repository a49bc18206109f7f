"""The last hour of this server's own metrics, for the dashboard's Activity page: a sample of
the counters ``/metrics`` exports every INTERVAL_S (10 s), at most WINDOW_S (an hour) of
them, in memory — a few hundred small tuples, whatever the load.

A sample copies the cumulative numbers (requests and their latency buckets per operation,
turns, tokens, model and tool calls and their latency buckets); a *point* is what happened
between two samples: rates per second, and the p50 and p99 of the latencies observed in
between, read from the bucket counts that moved (linear within a bucket, as Prometheus's
``histogram_quantile`` reads them). The last point of a document runs from the last sample to
now (its rates over a second at least), so a page opened right after a burst shows it.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from accord.telemetry import agents
from accord.telemetry._metrics import LATENCY_BUCKETS, Histogram, RequestMetrics

INTERVAL_S = 10.0
WINDOW_S = 3600.0


@dataclass(frozen=True, slots=True)
class _Timings:
    """A histogram's cumulative count and bucket counts at one sample."""

    count: int
    buckets: tuple[int, ...]


def _timings(histograms: Sequence[Histogram]) -> _Timings:
    buckets = [0] * (len(LATENCY_BUCKETS) + 1)
    for histogram in histograms:
        for n, count in enumerate(histogram.counts):
            buckets[n] += count
    return _Timings(sum(buckets), tuple(buckets))


@dataclass(frozen=True, slots=True)
class Sample:
    at: float  # wall-clock seconds
    requests: dict[str, tuple[int, int, _Timings]]  # operation -> (count, errors, latency)
    turns: float
    tokens_in: float
    tokens_out: float
    turn: _Timings
    model: _Timings
    tool: _Timings


def take_sample(requests: RequestMetrics | None, at: float) -> Sample:
    """The cumulative numbers now (operations across bindings and tenants)."""
    by_operation: dict[str, tuple[int, int, list[Histogram]]] = {}
    for (_binding, method, _tenant), kept in list((requests.by_key if requests else {}).items()):
        count, errors, histograms = by_operation.get(method, (0, 0, []))
        outcomes = dict(kept.outcomes)
        done = sum(outcomes.values())
        failed = done - outcomes.get("ok", 0)
        by_operation[method] = (count + done, errors + failed, [*histograms, kept.latency])
    stats = agents.STATS
    tokens = dict(stats.tokens.counts)
    return Sample(
        at=at,
        requests={op: (c, e, _timings(h)) for op, (c, e, h) in by_operation.items()},
        turns=sum(stats.turns.counts.values()),
        tokens_in=sum(v for (_model, way), v in tokens.items() if way == "input"),
        tokens_out=sum(v for (_model, way), v in tokens.items() if way == "output"),
        turn=_timings([stats.turn_duration]),
        model=_timings(list(stats.model_duration.by_key.values())),
        tool=_timings(list(stats.tool_duration.by_key.values())),
    )


def quantile(q: float, buckets: Sequence[int]) -> float | None:
    """The ``q`` quantile (seconds) of the values counted in ``buckets`` (LATENCY_BUCKETS
    and the overflow last); None without values."""
    total = sum(buckets)
    if total <= 0:
        return None
    rank = q * total
    seen = 0
    for n, count in enumerate(buckets):
        if count and seen + count >= rank:
            if n >= len(LATENCY_BUCKETS):
                return LATENCY_BUCKETS[-1]  # above every bound: the last one is all we know
            low = LATENCY_BUCKETS[n - 1] if n else 0.0
            high = LATENCY_BUCKETS[n]
            return low + (high - low) * (rank - seen) / count
        seen += count
    return LATENCY_BUCKETS[-1]


def _moved(after: _Timings, before: _Timings | None) -> dict[str, Any] | None:
    old = before.buckets if before is not None else (0,) * len(after.buckets)
    delta = [a - b for a, b in zip(after.buckets, old, strict=True)]
    if sum(delta) <= 0:
        return None
    return {"n": sum(delta), "p50": quantile(0.5, delta), "p99": quantile(0.99, delta)}


def point(before: Sample, after: Sample, min_span_s: float = 1e-3) -> dict[str, Any]:
    """What happened between two samples, per second (over at least ``min_span_s``), and its
    latencies."""
    span = max(after.at - before.at, min_span_s)
    requests = errors = 0
    latency: dict[str, Any] = {}
    for op, (count, failed, timings) in after.requests.items():
        was = before.requests.get(op)
        requests += count - (was[0] if was else 0)
        errors += failed - (was[1] if was else 0)
        moved = _moved(timings, was[2] if was else None)
        if moved is not None:
            latency[op] = moved
    return {
        "at": round(after.at, 3),
        "seconds": round(span, 3),
        "requests": requests / span,
        "errors": errors / span,
        "turns": (after.turns - before.turns) / span,
        "tokensIn": (after.tokens_in - before.tokens_in) / span,
        "tokensOut": (after.tokens_out - before.tokens_out) / span,
        "latency": latency,
        "turn": _moved(after.turn, before.turn),
        "model": _moved(after.model, before.model),
        "tool": _moved(after.tool, before.tool),
    }


class ActivityHistory:
    """Samples ``requests`` (the application's RequestMetrics) and the agents' numbers every
    ``interval_s``, keeping ``window_s`` of them; :meth:`run` is the sampler."""

    def __init__(
        self,
        requests: RequestMetrics | None,
        *,
        interval_s: float = INTERVAL_S,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.requests = requests
        self.interval_s = interval_s
        self.window_s = window_s
        self.clock = clock
        self.samples: deque[Sample] = deque(maxlen=int(window_s / interval_s) + 1)
        self.sample()
        self._waiters: list[asyncio.Future[None]] = []

    def sample(self) -> Sample:
        taken = take_sample(self.requests, self.clock())
        self.samples.append(taken)
        return taken

    async def run(self) -> None:
        """Take a sample every interval, waking whoever waits for one; until cancelled."""
        while True:
            await asyncio.sleep(self.interval_s)
            self.sample()
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    async def next_sample(self, timeout_s: float) -> bool:
        """Wait for the next sample (True), or ``timeout_s`` (False)."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout_s)
            return True
        except TimeoutError:
            return False
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def points(self) -> list[dict[str, Any]]:
        """Every point of the window, then the one from the last sample to now."""
        samples = list(self.samples)
        found = [point(a, b) for a, b in pairwise(samples)]
        now = take_sample(self.requests, self.clock())
        if now.at > samples[-1].at:  # (a rate over a second at least: a moment is no rate)
            found.append({**point(samples[-1], now, 1.0), "partial": True})
        return found

    def latest(self) -> dict[str, Any] | None:
        """The point the last sample closed."""
        if len(self.samples) < 2:
            return None
        return point(self.samples[-2], self.samples[-1])

    def document(self) -> dict[str, Any]:
        return {
            "intervalS": self.interval_s,
            "windowS": self.window_s,
            "metrics": self.requests is not None,
            "points": self.points(),
        }
