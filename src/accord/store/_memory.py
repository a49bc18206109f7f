"""In-memory TaskStore: plain dicts, for tests and throwaway use.

Records and events are kept as given, not copied: they are immutable by convention (the core
always builds new ones). Semantics match the SQLite store, which the shared test suite checks;
list and scan costs grow with the number of tasks, which is fine at this scale.

A task's ProtoJSON (GetTask's JSON fast path, :class:`TaskSnapshots`) is encoded when it is
first read and kept until the task changes: without it every GetTask encoded the task again,
and GetTask on this store cost more CPU than on SQLite, which keeps the bytes (measured in
docs/benchmarks.md).
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
from collections.abc import Sequence
from typing import Generic, Literal, cast

from accord.core import Event, PushConfigRecord, RequestKey, TaskRecord
from accord.core.lifecycle import TERMINAL
from accord.core.views import Cursor, TaskQuery, after_cursor, matches, sort_key
from accord.store._base import (
    DeliveryState,
    DuplicateRequest,
    FeedEntry,
    LimitExceeded,
    PushDelivery,
    SeqConflict,
    StoredRequest,
    TaskGone,
    TaskPage,
    new_secret,
)
from accord.store._checks import check_append
from accord.store._extensions import (
    Extensions,
    ExtensionState,
    MemoryAccess,
    S,
    StoreExtension,
)
from accord.wire import TaskState, encode


@dataclasses.dataclass(slots=True)
class _Delivery:
    cursor: int
    state: DeliveryState = "active"
    failures: int = 0
    last_error: str = ""
    next_attempt_ms: int = 0


class MemoryStore:
    def __init__(self) -> None:
        self._tasks: dict[str, TaskRecord] = {}
        self._events: dict[str, list[Event]] = {}
        # task id -> config id -> record; dict order is insertion order (oldest first).
        self._push: dict[str, dict[str, PushConfigRecord]] = {}
        # In position order; retention removes a deleted task's entries, so positions come
        # from a counter that never goes back, not from the list's length.
        self._feed: list[FeedEntry] = []
        self._feed_position = 0
        # task id -> config id -> delivery state, kept beside ``_push``.
        self._delivery: dict[str, dict[str, _Delivery]] = {}
        self._secrets: dict[str, bytes] = {}
        # (tenant, caller, key) -> a request carried out (safe retries), oldest first.
        self._requests: dict[tuple[str, str, str], StoredRequest] = {}
        # task id -> (the record encoded, its ProtoJSON): current while the record is.
        self._snapshots: dict[str, tuple[TaskRecord, bytes]] = {}
        self._extensions = Extensions()
        self._states: dict[str, ExtensionState] = {}  # extension name -> its state here
        self._open = False

    def extend(self, extension: StoreExtension[S]) -> MemoryAccess[S]:
        """Register a feature's tables (:mod:`accord.store._extensions`), before open(): its
        state here, made once."""
        if self._extensions.add(extension, store_open=self._open):
            self._states[extension.name] = extension.memory()
        return _Access(self, cast(S, self._states[extension.name]))

    async def open(self) -> None:
        self._open = True

    async def close(self) -> None:
        self._open = False

    async def shared_secret(self, name: str) -> bytes:
        return self._secrets.setdefault(name, new_secret())

    async def ping(self) -> None:
        pass

    # --- tasks and their logs --------------------------------------------------------------

    async def append(
        self,
        record: TaskRecord,
        events: Sequence[Event],
        expected_seq: int,
        *,
        tenant_task_limit: int | None = None,
        requests: Sequence[RequestKey] = (),
    ) -> None:
        check_append(record, events, expected_seq)
        current = self._tasks.get(record.id)
        actual = current.seq if current is not None else 0
        if actual != expected_seq:
            raise SeqConflict(record.id, expected_seq, actual)
        if (
            expected_seq == 0
            and tenant_task_limit is not None
            and await self.count_tasks(record.tenant) >= tenant_task_limit
        ):
            raise LimitExceeded("tasks_per_tenant", tenant_task_limit, record.id)
        for key in requests:
            held = self._requests.get((key.tenant, key.caller, key.key))
            if held is not None:
                raise DuplicateRequest(key, held.task_id)
        for key in requests:
            self._requests[(key.tenant, key.caller, key.key)] = StoredRequest(key, record.id)
        self._events.setdefault(record.id, []).extend(events)
        self._tasks[record.id] = record
        self._feed_append(record.tenant, record.id, list(events))

    async def get_task(self, task_id: str, tenant: str | None) -> TaskRecord | None:
        record = self._tasks.get(task_id)
        if record is None or (tenant is not None and record.tenant != tenant):
            return None
        return record

    async def get_snapshot(self, task_id: str, tenant: str) -> bytes | None:
        record = await self.get_task(task_id, tenant)
        if record is None:
            return None
        kept = self._snapshots.get(task_id)
        if kept is not None and kept[0] is record:
            return kept[1]
        snapshot = encode(record.task)
        self._snapshots[task_id] = (record, snapshot)
        return snapshot

    async def read_events(self, task_id: str, after_seq: int, limit: int = 1000) -> list[Event]:
        log = self._events.get(task_id)
        if not log or limit <= 0:
            return []
        start = max(after_seq, 0)  # seqs are 1, 2, 3 …: event n sits at index n - 1
        return log[start : start + limit]

    async def list_tasks(self, query: TaskQuery) -> TaskPage:
        matching = [r for r in self._tasks.values() if matches(r, query)]
        candidates = (r for r in matching if after_cursor(r, query.after))
        page = heapq.nlargest(query.page_size + 1, candidates, key=sort_key)
        next_cursor = None
        if len(page) > query.page_size:
            del page[query.page_size :]
            last = page[-1]
            next_cursor = Cursor(last.updated_ms, last.id)
        return TaskPage(records=page, total_size=len(matching), next_cursor=next_cursor)

    async def count_tasks(self, tenant: str) -> int:
        return sum(1 for r in self._tasks.values() if r.tenant == tenant)

    async def tasks_in_states(
        self, states: frozenset[TaskState], limit: int = 1000, after_id: str = ""
    ) -> list[TaskRecord]:
        found = (r for r in self._tasks.values() if r.state in states and r.id > after_id)
        return heapq.nsmallest(limit, found, key=lambda r: r.id)

    async def delete_terminal_before(self, cutoff_ms: int, limit: int = 1000) -> int:
        doomed = [
            r.id for r in self._tasks.values() if r.state in TERMINAL and r.updated_ms < cutoff_ms
        ][: max(limit, 0)]
        self.delete_tasks(doomed)
        return len(doomed)

    def delete_tasks(self, doomed: Sequence[str]) -> None:
        """Delete these tasks with their logs, push configs, feed entries and the extensions'
        rows of them."""
        for task_id in doomed:
            del self._tasks[task_id]
            self._snapshots.pop(task_id, None)
            self._events.pop(task_id, None)
            self._push.pop(task_id, None)
            self._delivery.pop(task_id, None)
        if doomed:  # their feed entries go too (readers may skip a deleted task's entries)
            gone = set(doomed)
            self._feed = [entry for entry in self._feed if entry.task_id not in gone]
            for state in self._states.values():
                state.forget_tasks(gone)

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        """Delete those of the tenant's tasks that are terminal (:meth:`delete_tasks`)."""
        doomed = []
        for task_id in task_ids:
            found = await self.get_task(task_id, tenant)
            if found is not None and found.state in TERMINAL:
                doomed.append(task_id)
        self.delete_tasks(doomed)
        return doomed

    # --- push-notification configs ---------------------------------------------------------

    async def put_push_config(
        self,
        config: PushConfigRecord,
        deliver_after: int | None = None,
        *,
        max_per_task: int | None = None,
    ) -> None:
        task_id, config_id = config.config.task_id, config.config.id
        if task_id not in self._tasks:
            raise TaskGone(task_id)
        configs = self._push.get(task_id, {})
        if max_per_task is not None and config_id not in configs and len(configs) >= max_per_task:
            raise LimitExceeded("push_configs_per_task", max_per_task, task_id)
        self._push.setdefault(task_id, {})[config_id] = config
        self._feed_config(config.tenant, task_id, config_id, config)
        deliveries = self._delivery.setdefault(task_id, {})
        current = deliveries.get(config_id)
        if current is None:
            if deliver_after is None:
                deliver_after = self._tasks[task_id].seq
            deliveries[config_id] = _Delivery(cursor=deliver_after)
        else:
            deliveries[config_id] = _Delivery(cursor=current.cursor)

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        return self._push.get(task_id, {}).get(config_id)

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        return list(self._push.get(task_id, {}).values())

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        configs = self._push.get(task_id)
        removed = configs.pop(config_id, None) if configs is not None else None
        if configs is None or removed is None:
            return False
        self._feed_config(removed.tenant, task_id, config_id, None)
        deliveries = self._delivery[task_id]
        del deliveries[config_id]
        if not configs:
            del self._push[task_id]
            del self._delivery[task_id]
        return True

    async def all_push_configs(
        self, limit: int = 1000, after: tuple[str, str] = ("", "")
    ) -> list[PushConfigRecord]:
        found = (
            (key, record)
            for task_id, configs in self._push.items()
            for config_id, record in configs.items()
            if (key := (task_id, config_id)) > after
        )
        return [record for _, record in heapq.nsmallest(limit, found, key=lambda kv: kv[0])]

    # --- push delivery ---------------------------------------------------------------------

    def _view(self, task_id: str, config_id: str) -> PushDelivery:
        row = self._delivery[task_id][config_id]
        task = self._tasks.get(task_id)
        return PushDelivery(
            config=self._push[task_id][config_id],
            cursor=row.cursor,
            state=row.state,
            failures=row.failures,
            last_error=row.last_error,
            next_attempt_ms=row.next_attempt_ms,
            task_seq=task.seq if task is not None else 0,
        )

    async def claim_push_deliveries(
        self, now_ms: int, lease_ms: int, limit: int = 100, task_id: str | None = None
    ) -> list[PushDelivery]:
        scope = (
            self._delivery.items()
            if task_id is None
            else [(task_id, self._delivery.get(task_id, {}))]
        )
        due: list[tuple[int, str, str]] = []
        for tid, rows in scope:
            task = self._tasks.get(tid)
            if task is None:
                continue
            for cid, row in rows.items():
                if (
                    row.state == "active"
                    and row.next_attempt_ms <= now_ms
                    and row.cursor < task.seq
                ):
                    due.append((row.next_attempt_ms, tid, cid))
        claimed = []
        for _, tid, cid in heapq.nsmallest(limit, due):
            self._delivery[tid][cid].next_attempt_ms = now_ms + lease_ms
            claimed.append(self._view(tid, cid))
        return claimed

    async def update_push_delivery(
        self,
        task_id: str,
        config_id: str,
        *,
        cursor: int,
        state: DeliveryState,
        failures: int,
        last_error: str,
        next_attempt_ms: int,
    ) -> bool:
        row = self._delivery.get(task_id, {}).get(config_id)
        if row is None:
            return False
        row.cursor = max(row.cursor, cursor)
        row.state = state
        row.failures = failures
        row.last_error = last_error
        row.next_attempt_ms = next_attempt_ms
        return True

    async def get_push_delivery(self, task_id: str, config_id: str) -> PushDelivery | None:
        if config_id not in self._delivery.get(task_id, {}):
            return None
        return self._view(task_id, config_id)

    async def list_push_deliveries(
        self, state: DeliveryState, limit: int = 100, after: tuple[str, str] = ("", "")
    ) -> list[PushDelivery]:
        keys = (
            key
            for task_id, rows in self._delivery.items()
            for config_id, row in rows.items()
            if row.state == state and (key := (task_id, config_id)) > after
        )
        return [self._view(*key) for key in heapq.nsmallest(limit, keys)]

    # --- the global feed ---------------------------------------------------------------------

    def _feed_append(
        self,
        tenant: str,
        task_id: str,
        events: list[Event],
        config_id: str = "",
        config: PushConfigRecord | None = None,
    ) -> None:
        self._feed_position += 1
        entry = FeedEntry(self._feed_position, tenant, task_id, events, config_id, config)
        self._feed.append(entry)

    def _feed_config(
        self, tenant: str, task_id: str, config_id: str, config: PushConfigRecord | None
    ) -> None:
        self._feed_append(tenant, task_id, [], config_id, config)

    async def read_feed(self, after: int, tenant: str | None, limit: int = 256) -> list[FeedEntry]:
        found: list[FeedEntry] = []
        start = bisect.bisect_right(self._feed, after, key=lambda entry: entry.position)
        for entry in self._feed[start:]:
            if len(found) >= limit:
                break
            if tenant is not None and entry.tenant != tenant:
                continue
            if entry.config_id:  # the config as stored now, like a store that reads it back
                current = self._push.get(entry.task_id, {}).get(entry.config_id)
                entry = dataclasses.replace(entry, config=current)
            found.append(entry)
        return found

    # --- operations: what /metrics reads (StoreGauges) --------------------------------------

    async def task_state_counts(self) -> list[tuple[str, TaskState, int]]:
        counts: dict[tuple[str, TaskState], int] = {}
        for record in self._tasks.values():
            key = (record.tenant, record.state)
            counts[key] = counts.get(key, 0) + 1
        return [(tenant, state, n) for (tenant, state), n in counts.items()]

    async def push_backlog(self) -> tuple[int, int, int]:
        configs = entries = failing = 0
        for task_id, rows in self._delivery.items():
            task = self._tasks.get(task_id)
            for row in rows.values():
                if row.state == "failing":
                    failing += 1
                elif row.state == "active" and task is not None and row.cursor < task.seq:
                    configs += 1
                    entries += task.seq - row.cursor
        return configs, entries, failing

    # --- safe retries (RequestLog) -------------------------------------------------------------

    async def find_request(self, tenant: str, caller: str, key: str) -> StoredRequest | None:
        return self._requests.get((tenant, caller, key))

    async def put_request(self, request: StoredRequest) -> StoredRequest | None:
        key = request.key
        held = self._requests.get((key.tenant, key.caller, key.key))
        if held is not None:
            return held
        self._requests[(key.tenant, key.caller, key.key)] = request
        return None

    async def delete_requests_before(self, cutoff_ms: int, limit: int = 1000) -> int:
        doomed = [k for k, r in self._requests.items() if r.key.created_ms < cutoff_ms]
        for k in doomed[: max(limit, 0)]:
            del self._requests[k]
        return min(len(doomed), max(limit, 0))


class _Access(Generic[S]):
    """A store extension's way into a MemoryStore
    (:class:`~accord.store._extensions.MemoryAccess`): its state there."""

    dialect: Literal["memory"] = "memory"

    def __init__(self, store: MemoryStore, state: S) -> None:
        self._store = store
        self.state = state

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        return await self._store.delete_terminal_tasks(tenant, task_ids)
