"""The Health page: the store and the bus, recovery, push delivery, and the nodes of a
PostgreSQL cluster, as one JSON document; and a stream of it that sends a new one when
anything in it changes.

What concerns tasks is the caller's tenant's only (its unfinished tasks, its outbox, its
failing webhooks); the store, the bus and the nodes are the server's, and say nothing of any
tenant. Every count is bounded: past ``SCAN_LIMIT`` push configs the outbox depth is given
as at least that many.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from accord.bus.local import LocalBus
from accord.core.views import TaskQuery
from accord.dashboard.deliveries import config_row
from accord.dashboard.scope import Viewer
from accord.engine import Engine
from accord.server.health import Health
from accord.store.base import PushDelivery, TaskStore
from accord.store.postgres import PostgresStore
from accord.surface.feed import FeedHub
from accord.wire.codec import encode
from accord.wire.model import TaskState

SCAN_LIMIT = 10_000  # push configs read to count an outbox
FAILING_SHOWN = 20
REFRESH_S = 5.0  # the stream looks again this often, and after every commit it hears
_NODE_PREFIX = "accord node "  # the application_name of a node's LISTEN connection


def store_kind(store: TaskStore) -> str:
    name = type(store).__name__
    return {"SqliteStore": "sqlite", "MemoryStore": "memory", "PostgresStore": "postgresql"}.get(
        name, name
    )


class HealthReport:
    """Builds the Health document for one engine."""

    def __init__(self, engine: Engine, *, push: bool) -> None:
        self.engine = engine
        self.push = push
        self.checks = Health({"store": engine.store.ping, "bus": engine.bus.ping})

    async def document(self, viewer: Viewer) -> dict[str, Any]:
        engine = self.engine
        store = engine.store
        failed = await self.checks.failed_parts()
        bus_kind = "local" if type(engine.bus) is LocalBus else "postgresql"
        return {
            "store": {"kind": store_kind(store), "ready": "store" not in failed},
            "bus": {"kind": bus_kind, "ready": "bus" not in failed},
            "recovery": await self._recovery(viewer),
            "push": await self._push(viewer) if self.push else {"enabled": False},
            "nodes": await self._nodes(),
        }

    async def _recovery(self, viewer: Viewer) -> dict[str, Any]:
        engine = self.engine
        config = engine.config
        stats = engine.stats  # this process's sweeps since it started
        unfinished = 0
        for state in (TaskState.SUBMITTED, TaskState.WORKING):
            page = await engine.store.list_tasks(
                TaskQuery(tenant=viewer.tenant, status=state, page_size=1)
            )
            unfinished += page.total_size
        if config.resumable:
            mode = "off: the agent resumes tasks left running"
        elif store_kind(engine.store) == "postgresql" and config.task_holds:
            mode = f"at start, then every {config.recovery_interval_s:g} s"
            if config.liveness_interval_s > 0:
                mode += " and as soon as another node dies"
        else:
            mode = "at start"
        return {
            "mode": mode,
            "sweeps": stats.sweeps,
            "recovered": stats.recovered_tasks,
            "unfinished": unfinished,
        }

    async def _push(self, viewer: Viewer) -> dict[str, Any]:
        store = self.engine.store
        depth = 0
        scanned = 0
        after = ("", "")
        while scanned < SCAN_LIMIT:
            batch = await store.list_push_deliveries("active", 500, after)
            if not batch:
                break
            scanned += len(batch)
            after = (batch[-1].config.config.task_id, batch[-1].config.config.id)
            depth += sum(1 for d in batch if _owned(d, viewer) and d.cursor < d.task_seq)
        failing: list[dict[str, Any]] = []
        more_failing = False
        after = ("", "")
        scanned_failing = 0
        while scanned_failing < SCAN_LIMIT and not more_failing:
            batch = await store.list_push_deliveries("failing", 500, after)
            if not batch:
                break
            scanned_failing += len(batch)
            after = (batch[-1].config.config.task_id, batch[-1].config.config.id)
            for delivery in batch:
                if not _owned(delivery, viewer) or not await self._visible(delivery, viewer):
                    continue
                if len(failing) == FAILING_SHOWN:
                    more_failing = True
                    break
                failing.append(config_row(delivery.config, delivery))
        return {
            "enabled": True,
            "outbox": depth,
            "outboxAtLeast": scanned >= SCAN_LIMIT,
            "failing": failing,
            "moreFailing": more_failing,
        }

    async def _visible(self, delivery: PushDelivery, viewer: Viewer) -> bool:
        if viewer.sees_whole_tenant:
            return True
        record = await self.engine.store.get_task(delivery.config.config.task_id, viewer.tenant)
        return record is not None and viewer.sees(record.task)

    async def _nodes(self) -> list[dict[str, Any]] | None:
        """The cluster's nodes (PostgreSQL): each one's LISTEN connection, as the database
        sees it; None on a single-process store."""
        store = self.engine.store
        if not isinstance(store, PostgresStore):
            return None
        this = getattr(self.engine.bus, "node", "")
        try:
            rows = await store.pool.fetch(
                "SELECT application_name, host(client_addr), backend_start"
                " FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name LIKE $1"
                " ORDER BY backend_start",
                _NODE_PREFIX + "%",
            )
        except Exception:
            return []  # the store's readiness says what is wrong
        return [
            {
                "node": name.removeprefix(_NODE_PREFIX),
                "address": address or "local socket",
                "since": started.isoformat(),
                "this": name.removeprefix(_NODE_PREFIX) == this,
            }
            for name, address, started in rows
        ]

    async def follow(
        self, viewer: Viewer, hub: FeedHub, heartbeat_s: float
    ) -> AsyncIterator[bytes]:
        """``event: health`` frames: the document now, then each time it changes (looked
        at every REFRESH_S and after commits); keep-alives in between."""
        sent = b""
        idle = 0.0
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        while True:
            wake.clear()
            body = encode(await self.document(viewer))
            if body != sent:
                sent = body
                idle = 0.0
                yield b"event: health\ndata: " + body + b"\n\n"
            before = loop.time()
            await hub.wait(wake, REFRESH_S)
            if wake.is_set():
                await asyncio.sleep(0.5)  # a burst of commits makes one document
            idle += loop.time() - before
            if idle >= heartbeat_s:
                idle = 0.0
                yield b": keep-alive\n\n"


def _owned(delivery: PushDelivery, viewer: Viewer) -> bool:
    return delivery.config.tenant == viewer.tenant
