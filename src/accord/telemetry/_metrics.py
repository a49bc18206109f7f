"""The numbers accord keeps for Prometheus, kept cheap enough to be on by default.

Nothing here takes a lock or looks a label up per request: a binding holds the
:class:`RequestStats` of its operation and bumps plain integers on it; a histogram is a list
of bucket counts observed from a timing the caller took anyway. The collector
(:mod:`accord.telemetry._exposition`) reads them when ``/metrics`` is scraped. Counters read
from another thread (the SQLite writer's) may be a moment behind: a scrape sees each number
as it was when read.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

# Seconds: from a cached GetTask (~0.1 ms) to a long blocking turn.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
# Writes per commit: SQLite's group commit carries up to ~1,024.
BATCH_BUCKETS: tuple[float, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

# Label values that come from configuration or agents (models, tools, hooks) are bounded
# here too: past this many distinct values, the rest are counted as "other".
MAX_LABEL_VALUES = 64
OTHER = "other"


class Histogram:
    """Bucket counts and a sum; ``counts[i]`` counts values <= ``bounds[i]`` (and above the
    bound before it), the last one the values above every bound."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: Sequence[float] = LATENCY_BUCKETS) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, float]]:
        """Prometheus buckets: (upper bound, values at or below it), ``+Inf`` last."""
        out: list[tuple[str, float]] = []
        total = 0
        for bound, count in zip(self.bounds, self.counts, strict=False):
            total += count
            out.append((_bound(bound), float(total)))
        out.append(("+Inf", float(total + self.counts[-1])))
        return out


def _bound(value: float) -> str:
    return repr(float(value))


class RequestStats:
    """One (binding, operation[, tenant]): requests by outcome, their latency, open streams."""

    __slots__ = ("latency", "outcomes", "streams")

    def __init__(self) -> None:
        self.outcomes: dict[str, int] = {}
        self.latency = Histogram()
        self.streams = 0  # streams of this operation open now

    def done(self, outcome: str, seconds: float) -> None:
        outcomes = self.outcomes
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        self.latency.observe(seconds)


class RequestMetrics:
    """Every binding's :class:`RequestStats`, shared by the bindings of one application.

    ``stats(binding, method)`` is looked up once per request (one dict read); with
    ``tenant_labels`` the caller's tenant is part of the key (authenticated tenants only:
    anonymous callers name their tenant themselves, in the path, and would make the label
    unbounded)."""

    def __init__(self, *, tenant_labels: bool = False) -> None:
        self.tenant_labels = tenant_labels
        self.by_key: dict[tuple[str, str, str], RequestStats] = {}

    def stats(self, binding: str, method: str, tenant: str = "") -> RequestStats:
        key = (binding, method, tenant if self.tenant_labels else "")
        stats = self.by_key.get(key)
        if stats is None:
            stats = self.by_key[key] = RequestStats()
        return stats


class CommitStats:
    """A store's commits: how many, how many writes each carried, how long each took."""

    __slots__ = ("duration", "failures", "writes")

    def __init__(self) -> None:
        self.writes = Histogram(BATCH_BUCKETS)  # its count is the number of commits
        self.duration = Histogram()
        self.failures = 0  # commits that failed as a whole (every write of them failed)

    def committed(self, writes: int, seconds: float) -> None:
        self.writes.observe(writes)
        self.duration.observe(seconds)


class LabelCounter:
    """Counts by one or more label values, with at most ``MAX_LABEL_VALUES`` distinct keys
    (the rest count under ``other``)."""

    __slots__ = ("counts", "width")

    def __init__(self, width: int) -> None:
        self.width = width
        self.counts: dict[tuple[str, ...], float] = {}

    def add(self, key: tuple[str, ...], amount: float = 1.0) -> None:
        counts = self.counts
        if key not in counts and len(counts) >= MAX_LABEL_VALUES:
            key = (OTHER,) * self.width
        counts[key] = counts.get(key, 0.0) + amount


class LabelHistograms:
    """Histograms by label values, bounded like :class:`LabelCounter`."""

    __slots__ = ("by_key", "width")

    def __init__(self, width: int) -> None:
        self.width = width
        self.by_key: dict[tuple[str, ...], Histogram] = {}

    def observe(self, key: tuple[str, ...], value: float) -> None:
        histogram = self.by_key.get(key)
        if histogram is None:
            if len(self.by_key) >= MAX_LABEL_VALUES:
                key = (OTHER,) * self.width
                histogram = self.by_key.get(key)
            if histogram is None:
                histogram = self.by_key[key] = Histogram()
        histogram.observe(value)


class EngineStats:
    """Recovery sweeps (the start-up one and, on PostgreSQL, the periodic ones), and the
    tasks retention deleted in this process."""

    __slots__ = ("recovered_tasks", "retained_deleted", "sweeps")

    def __init__(self) -> None:
        self.sweeps = 0
        self.recovered_tasks = 0  # SUBMITTED/WORKING tasks of dead processes failed
        self.retained_deleted = 0  # ended tasks retention deleted (this process's sweeps)


class PushStats:
    """Webhook POST attempts and configs given up on."""

    __slots__ = ("delivered", "duration", "failed", "gave_up")

    def __init__(self) -> None:
        self.delivered = 0  # attempts answered 2xx
        self.failed = 0  # attempts that failed (retried later, or given up)
        self.gave_up = 0  # configs marked failing
        self.duration = Histogram()


class BusStats:
    """The PostgreSQL bus: notifications sent and received, and how late they arrived."""

    __slots__ = ("lag", "received", "sent")

    def __init__(self) -> None:
        self.sent = 0  # NOTIFY round trips (each a batch of task ids)
        self.received = 0  # notifications from other nodes
        self.lag = Histogram()  # seconds from a node's NOTIFY to its receipt here
