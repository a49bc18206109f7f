"""What ``GET /metrics`` shows (accord.server._metrics_endpoint serves it): the Prometheus text
format, built from the numbers the running parts keep (:mod:`accord.telemetry._metrics`) when a
scrape asks, never before.

Two kinds of values: counters and histograms the hot paths keep in memory (read as they are),
and gauges only the store knows — tasks by state, the push outbox's depth — read with one
query each per scrape (bounded by ``store_timeout_s``; a store that does not answer leaves
them out of that scrape and logs why).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from accord._version import __version__
from accord.telemetry import agents
from accord.telemetry._metrics import (
    BusStats,
    CommitStats,
    EngineStats,
    Histogram,
    PushStats,
    RequestMetrics,
)
from accord.wire import TaskState

log = logging.getLogger("accord.telemetry")

CONTENT_TYPE = CONTENT_TYPE_LATEST.encode()  # of the Prometheus text format
_STREAMING = frozenset({"SendStreamingMessage", "SubscribeToTask"})


@runtime_checkable
class StoreGauges(Protocol):
    """Optional, for a store: numbers only the store knows, read once per metrics scrape (each
    one query over small tables or an index, never a scan of the tasks)."""

    async def task_state_counts(self) -> list[tuple[str, TaskState, int]]:
        """(tenant, state, tasks) for every pair that holds tasks (the store's counters)."""

    async def push_backlog(self) -> tuple[int, int, int]:
        """(active configs with undelivered log entries, those entries, failing configs)."""


@dataclass
class Sources:
    """What one server reports; any part may be absent (None)."""

    requests: RequestMetrics
    engine: Any = None  # accord.engine.Engine
    push: PushStats | None = None
    tenant_labels: bool = False
    store_timeout_s: float = 2.0
    # (tenant, state) -> tasks, and the outbox, as the last scrape read them
    _tasks: list[tuple[str, str, int]] = field(default_factory=list)
    _backlog: tuple[int, int, int] | None = None

    async def refresh(self) -> None:
        store = getattr(self.engine, "store", None)
        if not isinstance(store, StoreGauges):
            return
        try:
            async with asyncio.timeout(self.store_timeout_s):
                counts = await store.task_state_counts()
                self._backlog = await store.push_backlog()
        except Exception as exc:  # the scrape still answers, without the store's gauges
            log.warning("metrics: reading the store's gauges failed: %s", exc)
            self._tasks, self._backlog = [], None
            return
        self._tasks = [(tenant, state.name, n) for tenant, state, n in counts]


class Collector:
    """Turns :class:`Sources` into metric families (prometheus_client's collector protocol)."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources

    def collect(self) -> Iterator[Metric]:
        yield from self._info()
        yield from self._requests()
        yield from self._engine()
        yield from self._store()
        yield from self._push()
        yield from self._bus()
        yield from agents.collect()

    @staticmethod
    def _info() -> Iterator[Metric]:
        info = GaugeMetricFamily("accord_build_info", "The running accord.", labels=["version"])
        info.add_metric([__version__], 1.0)
        yield info

    def _requests(self) -> Iterator[Metric]:
        metrics = self.sources.requests
        extra = ["tenant"] if metrics.tenant_labels else []
        total = CounterMetricFamily(
            "accord_requests",
            "A2A requests answered, by binding, method and outcome (ok, or the error reason).",
            labels=["binding", "method", "outcome", *extra],
        )
        latency = HistogramMetricFamily(
            "accord_request_duration_seconds",
            "Time to answer a request (for a stream: to its start).",
            labels=["binding", "method", *extra],
        )
        streams = GaugeMetricFamily(
            "accord_streams_open",
            "Streams (SSE, gRPC) open now, by binding and method.",
            labels=["binding", "method", *extra],
        )
        for (binding, method, tenant), stats in sorted(metrics.by_key.items()):
            tail = [tenant] if metrics.tenant_labels else []
            for outcome, count in sorted(stats.outcomes.items()):
                total.add_metric([binding, method, outcome, *tail], count)
            if stats.latency.count:
                _histogram(latency, [binding, method, *tail], stats.latency)
            if method in _STREAMING:
                streams.add_metric([binding, method, *tail], stats.streams)
        replayed = CounterMetricFamily(
            "accord_requests_replayed",
            "Retried requests answered with the first one's result (same messageId or "
            "Idempotency-Key), by method.",
            labels=["method"],
        )
        retries = getattr(self.sources.engine, "retries", None)
        for method, count in sorted(getattr(retries, "replayed", {}).items()):
            replayed.add_metric([method], count)
        yield from (total, latency, streams, replayed)

    def _engine(self) -> Iterator[Metric]:
        engine = self.sources.engine
        if engine is None:
            return
        running = GaugeMetricFamily(
            "accord_tasks_running", "Tasks whose agent runs in this process now."
        )
        running.add_metric([], len(getattr(engine, "_live", ())))
        yield running
        stats: EngineStats | None = getattr(engine, "stats", None)
        if stats is not None:
            yield CounterMetricFamily(
                "accord_recovery_sweeps", "Recovery sweeps run.", value=stats.sweeps
            )
            yield CounterMetricFamily(
                "accord_recovery_failed_tasks",
                "SUBMITTED or WORKING tasks of dead processes failed by recovery.",
                value=stats.recovered_tasks,
            )
            yield CounterMetricFamily(
                "accord_retention_deleted_tasks",
                "Ended tasks this process's retention sweeps deleted (retention_days).",
                value=stats.retained_deleted,
            )
        subscribers = getattr(engine.bus, "subscriber_total", None)
        if subscribers is not None:
            yield GaugeMetricFamily(
                "accord_bus_subscribers",
                "Followers of task logs in this process (streams, waiting requests).",
                value=subscribers(),
            )

    def _store(self) -> Iterator[Metric]:
        sources = self.sources
        store = getattr(sources.engine, "store", None)
        commits: CommitStats | None = getattr(store, "commit_metrics", None)
        if commits is not None:
            yield CounterMetricFamily(
                "accord_store_commits",
                "Store transactions committed (SQLite: one per group commit).",
                value=commits.writes.count,
            )
            writes = HistogramMetricFamily(
                "accord_store_commit_writes", "Writes one commit carried (group commit)."
            )
            _histogram(writes, [], commits.writes)
            yield writes
            duration = HistogramMetricFamily(
                "accord_store_commit_duration_seconds",
                "Time of one commit, from its first statement to its end.",
            )
            _histogram(duration, [], commits.duration)
            yield duration
            yield CounterMetricFamily(
                "accord_store_commit_failures",
                "Commits that failed as a whole (every write in them failed).",
                value=commits.failures,
            )
        holds = getattr(store, "holds_count", None)
        if holds is not None:
            yield GaugeMetricFamily(
                "accord_task_holds",
                "PostgreSQL advisory locks this node holds for the tasks it runs.",
                value=holds(),
            )
        if isinstance(store, StoreGauges):
            extra = ["tenant"] if sources.tenant_labels else []
            tasks = GaugeMetricFamily(
                "accord_tasks", "Stored tasks by state.", labels=["state", *extra]
            )
            if sources.tenant_labels:
                for tenant, state, n in sorted(sources._tasks):
                    tasks.add_metric([state, tenant], n)
            else:
                by_state: dict[str, int] = {}
                for _, state, n in sources._tasks:
                    by_state[state] = by_state.get(state, 0) + n
                for state, n in sorted(by_state.items()):
                    tasks.add_metric([state], n)
            yield tasks
            if sources._backlog is not None:
                configs, entries, failing = sources._backlog
                yield GaugeMetricFamily(
                    "accord_push_outbox_configs",
                    "Active push configs with log entries not yet delivered.",
                    value=configs,
                )
                yield GaugeMetricFamily(
                    "accord_push_outbox_entries",
                    "Log entries behind the delivery cursors of active push configs.",
                    value=entries,
                )
                yield GaugeMetricFamily(
                    "accord_push_configs_failing",
                    "Push configs given up on (failing) until re-created.",
                    value=failing,
                )

    def _push(self) -> Iterator[Metric]:
        push = self.sources.push
        if push is None:
            return
        deliveries = CounterMetricFamily(
            "accord_push_deliveries",
            "Webhook POST attempts by outcome (delivered: a 2xx answer).",
            labels=["outcome"],
        )
        deliveries.add_metric(["delivered"], push.delivered)
        deliveries.add_metric(["failed"], push.failed)
        yield deliveries
        yield CounterMetricFamily(
            "accord_push_gave_up",
            "Push configs marked failing (too many failed attempts, or a refused target).",
            value=push.gave_up,
        )
        duration = HistogramMetricFamily(
            "accord_push_delivery_duration_seconds", "Time of one webhook POST attempt."
        )
        _histogram(duration, [], push.duration)
        yield duration

    def _bus(self) -> Iterator[Metric]:
        bus: BusStats | None = getattr(getattr(self.sources.engine, "bus", None), "stats", None)
        if bus is None:
            return
        yield CounterMetricFamily(
            "accord_bus_notifies_sent", "NOTIFY round trips to other nodes.", value=bus.sent
        )
        yield CounterMetricFamily(
            "accord_bus_notifications_received",
            "Notifications from other nodes.",
            value=bus.received,
        )
        lag = HistogramMetricFamily(
            "accord_bus_lag_seconds",
            "From another node's NOTIFY to its receipt here (clocks in sync assumed).",
        )
        _histogram(lag, [], bus.lag)
        yield lag


def _histogram(family: HistogramMetricFamily, labels: list[str], histogram: Histogram) -> None:
    family.add_metric(labels, histogram.cumulative(), histogram.sum)
