"""The reads beside the A2A operations: what the dashboard shows, read through the rules the
operations apply (accord.service._access: tenant, grants, the agent's access check).

Each read takes a :class:`Reader` (``service.reader(caller, tenant)``) and refuses, as the
operations do, what that caller may not read: PERMISSION_DENIED without the read's grant;
task-not-found for a task of another tenant or one the agent hides from the caller, exactly
as for an id that names no task.

- :func:`visible_task`: a task as stored (its record, with its log's position);
- :func:`timeline`: every event of a task's log, as it is written (``message`` events and
  all, which SubscribeToTask does not stream), with the task as it stands after each batch;
- :func:`changes`: the tasks that change, from the store's feed, as the caller may see them;
- :func:`webhooks`: a task's push configs and where each one's delivery stands.

The table's pages and search are accord.service._search; the Health page's data
accord.service._status.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass

from accord.core import Event, PushConfigRecord, TaskRecord, apply, lifecycle
from accord.service import _feed as feed
from accord.service._access import Reader
from accord.service._operations import Service
from accord.store import FeedEntry, PushDelivery
from accord.wire import task_not_found

BATCH = 256  # log events read at once


@dataclass(frozen=True, slots=True)
class Visible:
    """A task as stored, read for a reader that may see it (what :func:`visible_task` and
    :func:`seen` give, and :func:`timeline` takes)."""

    record: TaskRecord


async def visible_task(service: Service, reader: Reader, task_id: str) -> Visible:
    """The task, if the reader may read it; else the task-not-found error an unknown id
    gets (a task the caller may not read looks exactly like one that does not exist)."""
    reader.require("task")
    return await _visible(service, reader, task_id)


async def seen(service: Service, reader: Reader, task_id: str) -> Visible | None:
    """The task if the reader may read it, else None (no grant checked: the caller's read
    has done that)."""
    record = await service.engine.store.get_task(task_id, reader.tenant)
    return Visible(record) if record is not None and reader.sees(record.task) else None


async def _visible(service: Service, reader: Reader, task_id: str) -> Visible:
    record = await seen(service, reader, task_id)
    if record is None:
        raise task_not_found(task_id)
    return record


# --- a task's log --------------------------------------------------------------------------


async def timeline(
    service: Service, task: Visible, after: int
) -> AsyncGenerator[TaskRecord | Event | None]:
    """The task as it stands, then its log's events after ``after`` (an ``after`` past the
    log's end has seen all there is) as they are written, and the task again after each
    batch of them; until the task is terminal and its log read to the end. None each time
    the service's heartbeat passes without an event. The agent's own journal entries are
    not the task's and are left out."""
    store, bus = service.engine.store, service.engine.bus
    record = task.record
    yield record
    cursor = min(after, record.seq)
    with bus.subscribe(record.id) as woken:
        while True:
            woken.clear()
            events = await store.read_events(record.id, cursor, BATCH)
            if events:
                for event in events:
                    cursor = event.seq
                    if event.seq > record.seq:  # the snapshot follows the log
                        record = TaskRecord(
                            task=apply(record.task, event),
                            tenant=record.tenant,
                            seq=event.seq,
                            created_ms=record.created_ms,
                            updated_ms=event.at_ms if event.kind == "status" else record.updated_ms,
                        )
                    if event.kind != "journal":
                        yield event
                yield record
                continue
            if lifecycle.is_terminal(record.state) and cursor >= record.seq:
                return
            if not await woken.wait(service.heartbeat_s):
                yield None


# --- the tasks that change -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Changes:
    """The tasks of the reader's tenant that change after feed position ``start``."""

    start: int  # the feed position the changes follow
    # (position of the task's latest change, the task as it now is); None each time the
    # service's heartbeat passes without one. Forever.
    tasks: AsyncGenerator[tuple[int, TaskRecord] | None]


async def changes(
    service: Service, reader: Reader, after: int | None, kinds: frozenset[str]
) -> Changes:
    """The tasks changed after feed position ``after`` (None: from now on) by an event of one
    of ``kinds`` (push-config changes are none), each the reader may see, as it is when
    read; a task that changed several times in one read of the feed is given once."""
    reader.require("tasks")
    store = service.engine.store
    start = await feed.head(store) if after is None else after
    entries = feed.batches(store, service.hub, reader.tenant, start, service.heartbeat_s)
    return Changes(start, _changed(service, reader, entries, kinds))


async def _changed(
    service: Service,
    reader: Reader,
    entries: AsyncGenerator[list[FeedEntry] | None],
    kinds: frozenset[str],
) -> AsyncGenerator[tuple[int, TaskRecord] | None]:
    async with aclosing(entries):
        async for batch in entries:
            if batch is None:
                yield None
                continue
            changed: dict[str, int] = {}  # task id -> its latest position in this batch
            for entry in batch:
                if not entry.config_id and any(event.kind in kinds for event in entry.events):
                    changed.pop(entry.task_id, None)  # (re-inserted: kept in the order of change)
                    changed[entry.task_id] = entry.position
            for task_id, position in changed.items():
                record = await service.engine.store.get_task(task_id, reader.tenant)
                if record is not None and reader.sees(record.task):
                    yield position, record  # (deleted since, or not this caller's: nothing)


# --- push delivery -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Webhook:
    """A push config and where its delivery stands (None: nothing delivered or owed yet)."""

    config: PushConfigRecord
    delivery: PushDelivery | None


async def webhooks(service: Service, reader: Reader, task_id: str) -> list[Webhook]:
    """The task's push configs, oldest first, each with its delivery state."""
    reader.require("push")
    await _visible(service, reader, task_id)
    store = service.engine.store
    return [
        Webhook(config, await store.get_push_delivery(task_id, config.config.id))
        for config in await store.list_push_configs(task_id)
    ]
