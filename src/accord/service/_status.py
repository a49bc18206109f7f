"""How the service stands, as the Health page shows it: the store and the bus, recovery,
push delivery, and the nodes of a PostgreSQL cluster.

What concerns tasks is the reader's tenant's only (its unfinished tasks, its outbox, its
failing webhooks, those of them whose task it may see); the store, the bus and the nodes
are the server's, and say nothing of any tenant. Every count is bounded: past
``SCAN_LIMIT`` push configs the outbox depth is given as at least that many.
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from accord.bus import LocalBus
from accord.core.views import TaskQuery
from accord.service._access import Reader
from accord.service._operations import Service
from accord.service._reads import Webhook, seen
from accord.store import PushDelivery, SharedStore, TaskStore
from accord.wire import TaskState

SCAN_LIMIT = 10_000  # push configs read to count an outbox
FAILING_SHOWN = 20
_PAGE = 500  # push deliveries read at once


def checks(service: Service) -> dict[str, Callable[[], Awaitable[None]]]:
    """The service's parts and the round trip that raises when one cannot serve now (the
    readiness probe's)."""
    engine = service.engine
    return {"store": engine.store.ping, "bus": engine.bus.ping}


def store_kind(store: TaskStore) -> str:
    name = type(store).__name__
    return {"SqliteStore": "sqlite", "MemoryStore": "memory", "PostgresStore": "postgresql"}.get(
        name, name
    )


@dataclass(frozen=True, slots=True)
class Recovery:
    resumable: bool  # the agent resumes the tasks a dead process left running: no sweeps
    interval_s: float | None  # swept again this often after the start (a cluster); else None
    watches_nodes: bool  # and swept as soon as another node dies (the node watch)
    sweeps: int  # this process's sweeps since it started
    recovered: int  # the tasks they failed
    unfinished: int  # the tenant's submitted and working tasks


@dataclass(frozen=True, slots=True)
class Backlog:
    outbox: int  # the tenant's webhooks behind on their delivery
    outbox_at_least: bool  # counted up to SCAN_LIMIT push configs only
    failing: list[Webhook]  # the tenant's failing webhooks the reader may see, at most 20
    more_failing: bool


@dataclass(frozen=True, slots=True)
class Node:
    node: str
    address: str
    since: datetime.datetime
    this: bool  # the node answering


@dataclass(frozen=True, slots=True)
class Status:
    store: str  # kind: memory, sqlite, postgresql
    bus: str  # kind: local, postgresql
    recovery: Recovery
    push: Backlog | None  # None: push notifications are off
    nodes: list[Node] | None  # None on a single-process store


async def status(service: Service, reader: Reader) -> Status:
    """How the service stands, for ``reader`` (its tenant's tasks and webhooks)."""
    reader.require("health")
    engine = service.engine
    return Status(
        store=store_kind(engine.store),
        bus="local" if type(engine.bus) is LocalBus else "postgresql",
        recovery=await _recovery(service, reader),
        push=await _push(service, reader) if service.push_notifications else None,
        nodes=await _nodes(service),
    )


async def _recovery(service: Service, reader: Reader) -> Recovery:
    engine = service.engine
    config = engine.config
    unfinished = 0
    for state in (TaskState.SUBMITTED, TaskState.WORKING):
        page = await engine.store.list_tasks(
            TaskQuery(tenant=reader.tenant, status=state, page_size=1)
        )
        unfinished += page.total_size
    periodic = store_kind(engine.store) == "postgresql" and config.task_holds
    return Recovery(
        resumable=config.resumable,
        interval_s=config.recovery_interval_s if periodic else None,
        watches_nodes=periodic and config.liveness_interval_s > 0,
        sweeps=engine.stats.sweeps,
        recovered=engine.stats.recovered_tasks,
        unfinished=unfinished,
    )


async def _push(service: Service, reader: Reader) -> Backlog:
    store = service.engine.store
    depth = 0
    scanned = 0
    after = ("", "")
    while scanned < SCAN_LIMIT:
        batch = await store.list_push_deliveries("active", _PAGE, after)
        if not batch:
            break
        scanned += len(batch)
        after = (batch[-1].config.config.task_id, batch[-1].config.config.id)
        depth += sum(1 for d in batch if _owned(d, reader) and d.cursor < d.task_seq)
    failing: list[Webhook] = []
    more_failing = False
    after = ("", "")
    scanned_failing = 0
    while scanned_failing < SCAN_LIMIT and not more_failing:
        batch = await store.list_push_deliveries("failing", _PAGE, after)
        if not batch:
            break
        scanned_failing += len(batch)
        after = (batch[-1].config.config.task_id, batch[-1].config.config.id)
        for delivery in batch:
            if not _owned(delivery, reader) or not await _visible(service, delivery, reader):
                continue
            if len(failing) == FAILING_SHOWN:
                more_failing = True
                break
            failing.append(Webhook(delivery.config, delivery))
    return Backlog(depth, scanned >= SCAN_LIMIT, failing, more_failing)


def _owned(delivery: PushDelivery, reader: Reader) -> bool:
    return delivery.config.tenant == reader.tenant


async def _visible(service: Service, delivery: PushDelivery, reader: Reader) -> bool:
    if reader.sees_whole_tenant:
        return True  # (no need to read the task)
    return await seen(service, reader, delivery.config.config.task_id) is not None


async def _nodes(service: Service) -> list[Node] | None:
    """The cluster's nodes (PostgreSQL): each one's LISTEN connection, as the database sees
    it; None on a single-process store, [] when the database does not answer (the store's
    readiness says what is wrong)."""
    engine = service.engine
    store = engine.store
    if not isinstance(store, SharedStore):
        return None
    this = getattr(engine.bus, "node", "")
    try:
        nodes = await store.nodes()
    except Exception:
        return []
    return [Node(node, address, started, node == this) for node, address, started in nodes]
