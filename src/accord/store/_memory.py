"""In-memory TaskStore: plain dicts, for tests and throwaway use.

Semantics match the SQLite store, which the shared test suite checks; list and scan costs
grow with the number of tasks.

**Held in a form the garbage collector does not walk.** A task is kept as a row of plain
values (a ``gc=False`` msgspec struct) with its snapshot encoded (the ProtoJSON GetTask answers
with, as the SQL stores keep it), its log as a tuple of (seq, kind, at_ms, encoded body), the
feed and the request log as rows of plain values: none of them is tracked by CPython's cyclic
collector, so a full collection no longer walks every task. Kept as objects, each task cost
about 13 tracked containers (the lists inside a Task), and at 100,000 tasks a full collection
took 0.6 to 1.7 s on a loaded machine, the tail of every request that met one
(docs/benchmarks.md, "The memory store at size"). Reads decode what they return, as the SQL
stores do; the records most recently written or read are kept decoded (``RECENT``), so an
append and the read that follows it do not decode. What is left for the collector is the
store's tables themselves (a few dicts and a list, each visited entry by entry in a full
collection: 171 ms at 1,000,000 tasks on a loaded machine); ``accord serve`` freezes them at
start (``gc.freeze()`` of everything built before serving), so a server's full collections
do not visit them at all.

**Ended tasks can be bounded**: ``MemoryStore(max_ended_tasks=N)``
(``memory://?max_ended_tasks=N``) keeps at most N tasks in a terminal state, deleting the
oldest ended first, with their logs, push configs and feed entries (what retention deletes),
in batches of N/16.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import heapq
from collections.abc import Iterable, Sequence
from typing import Generic, Literal, TypeVar, cast

import msgspec

from accord.core import Event, PushConfigRecord, RequestKey, TaskRecord
from accord.core.views import Cursor, TaskQuery
from accord.store import _rows
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


class _Row(msgspec.Struct, gc=False, frozen=True):
    """A task as held, its snapshot encoded."""

    tenant: str
    seq: int
    created_ms: int
    updated_ms: int
    snapshot: bytes
    state: int  # _rows.STATE_NUMBER
    context_id: str


class _FeedRow(msgspec.Struct, gc=False, frozen=True):
    """One feed entry: an append's events are its task's log from ``first`` to ``last`` seq;
    a config change has none (first > last)."""

    position: int
    tenant: str
    task_id: str
    first: int
    last: int
    config_id: str


class _RequestRow(msgspec.Struct, gc=False, frozen=True):
    """A request carried out (its key is the dict's)."""

    fingerprint: bytes
    created_ms: int
    task_id: str
    response: bytes | None


# One event of a task's log: (seq, kind, at_ms, body encoded), what _rows.events reads.
_EventRow = tuple[int, str, int, bytes]

RECENT = 512  # records kept decoded, most recently written or read

K = TypeVar("K")
V = TypeVar("V")


class _Table(dict[K, V]):
    """A dict the collector never untracks. CPython untracks a plain dict that holds no
    tracked object (these hold none) and tracks it again, as a young object, when one is
    put in it; a young collection then visits and re-checks every entry, so each cost time
    in proportion to the store (0.2 ms at 100,000 tasks, every ~100 sends). The collector
    untracks exact dicts only: this one stays tracked, in the oldest generation."""


_TERMINAL_NUMBERS = frozenset(_rows.TERMINAL_NUMBERS)


@dataclasses.dataclass(slots=True)
class _Recent:
    """A task recently written or read, as objects: its current record, and its whole log
    as appended when every append of it was made while it was recent (else None)."""

    record: TaskRecord
    log: list[Event] | None


@dataclasses.dataclass(slots=True)
class _Delivery:
    cursor: int
    state: DeliveryState = "active"
    failures: int = 0
    last_error: str = ""
    next_attempt_ms: int = 0


class MemoryStore:
    def __init__(self, *, max_ended_tasks: int | None = None) -> None:
        if max_ended_tasks is not None and max_ended_tasks < 1:
            raise ValueError("max_ended_tasks must be at least 1")
        self._tasks: _Table[str, _Row] = _Table()
        self._recent: dict[str, _Recent] = {}  # oldest first; at most RECENT
        self._events: _Table[str, tuple[_EventRow, ...]] = _Table()
        # task id -> config id -> record; dict order is insertion order (oldest first).
        self._push: dict[str, dict[str, PushConfigRecord]] = {}
        # In position order; retention removes a deleted task's entries, so positions come
        # from a counter that never goes back, not from the list's length.
        self._feed: list[_FeedRow] = []
        self._feed_position = 0
        # task id -> config id -> delivery state, kept beside ``_push``.
        self._delivery: dict[str, dict[str, _Delivery]] = {}
        self._secrets: dict[str, bytes] = {}
        # (tenant, caller, key) -> a request carried out (safe retries), oldest first.
        self._requests: _Table[tuple[str, str, str], _RequestRow] = _Table()
        self._max_ended = max_ended_tasks
        self._ended: _Table[str, None] = _Table()  # oldest first (with max_ended_tasks)
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

    def append(
        self,
        record: TaskRecord,
        events: Sequence[Event],
        expected_seq: int,
        *,
        tenant_task_limit: int | None = None,
        requests: Sequence[RequestKey] = (),
    ) -> asyncio.Future[None]:
        """Appends at once and returns a done future (its exception what the append raised):
        the engine waits on it without a task of its own for the write."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        try:
            self._append(record, events, expected_seq, tenant_task_limit, requests)
        except Exception as exc:
            done.set_exception(exc)
        else:
            done.set_result(None)
        return done

    def _append(
        self,
        record: TaskRecord,
        events: Sequence[Event],
        expected_seq: int,
        tenant_task_limit: int | None,
        requests: Sequence[RequestKey],
    ) -> None:
        check_append(record, events, expected_seq)
        current = self._tasks.get(record.id)
        actual = current.seq if current is not None else 0
        if actual != expected_seq:
            raise SeqConflict(record.id, expected_seq, actual)
        if (
            expected_seq == 0
            and tenant_task_limit is not None
            and self._count_tasks(record.tenant) >= tenant_task_limit
        ):
            raise LimitExceeded("tasks_per_tenant", tenant_task_limit, record.id)
        for key in requests:
            held = self._requests.get((key.tenant, key.caller, key.key))
            if held is not None:
                raise DuplicateRequest(key, held.task_id)
        for key in requests:
            self._requests[(key.tenant, key.caller, key.key)] = _RequestRow(
                key.fingerprint, key.created_ms, record.id, None
            )
        task = record.task
        snapshot = encode(task)
        state = _rows.STATE_NUMBER[record.state]
        log = self._events.get(record.id, ())
        # a creation event carries the snapshot itself: encode it once
        added = tuple(
            (e.seq, e.kind, e.at_ms, snapshot if e.body is task else encode(e.body)) for e in events
        )
        self._events[record.id] = log + added
        self._tasks[record.id] = _Row(
            record.tenant,
            record.seq,
            record.created_ms,
            record.updated_ms,
            snapshot,
            state,
            task.context_id,
        )
        was = self._recent.pop(record.id, None)
        if expected_seq == 0:
            self._remember(record, list(events))
        elif was is not None and was.log is not None and len(was.log) == expected_seq:
            was.log.extend(events)
            self._remember(record, was.log)
        else:
            self._remember(record, None)
        self._feed_position += 1
        self._feed.append(
            _FeedRow(self._feed_position, record.tenant, record.id, events[0].seq, record.seq, "")
        )
        if (
            self._max_ended is not None
            and state in _TERMINAL_NUMBERS
            and (current is None or current.state not in _TERMINAL_NUMBERS)
        ):
            self._ended[record.id] = None
            if len(self._ended) > self._max_ended:
                self._evict_ended(self._max_ended)

    def _evict_ended(self, bound: int) -> None:
        """Delete the oldest ended tasks, to ``bound`` less a batch (so that the feed, which
        a deletion rewrites, is rewritten once per batch, not once per task)."""
        excess = len(self._ended) - bound + bound // 16
        doomed: list[str] = []
        for task_id in self._ended:
            if len(doomed) >= excess:
                break
            doomed.append(task_id)
        self.delete_tasks(doomed)

    def _remember(self, record: TaskRecord, log: list[Event] | None) -> None:
        recent = self._recent
        recent.pop(record.id, None)
        recent[record.id] = _Recent(record, log)
        if len(recent) > RECENT:
            del recent[next(iter(recent))]

    def _record(self, task_id: str, row: _Row) -> TaskRecord:
        held = self._recent.get(task_id)
        if held is not None and held.record.seq == row.seq:
            return held.record
        record = TaskRecord(
            task=_rows.task_decoder.decode(row.snapshot),
            tenant=row.tenant,
            seq=row.seq,
            created_ms=row.created_ms,
            updated_ms=row.updated_ms,
        )
        self._remember(record, None)
        return record

    def _records(self, ids: Iterable[str]) -> list[TaskRecord]:
        return [self._record(task_id, self._tasks[task_id]) for task_id in ids]

    async def get_task(self, task_id: str, tenant: str | None) -> TaskRecord | None:
        row = self._tasks.get(task_id)
        if row is None or (tenant is not None and row.tenant != tenant):
            return None
        return self._record(task_id, row)

    async def get_snapshot(self, task_id: str, tenant: str) -> bytes | None:
        row = self._tasks.get(task_id)
        if row is None or row.tenant != tenant:
            return None
        return row.snapshot

    async def read_events(self, task_id: str, after_seq: int, limit: int = 1000) -> list[Event]:
        log = self._events.get(task_id)
        if not log or limit <= 0:
            return []
        start = max(after_seq, 0)  # seqs are 1, 2, 3 …: event n sits at index n - 1
        held = self._recent.get(task_id)
        if held is not None and held.log is not None:
            return held.log[start : start + limit]
        return _rows.events(task_id, log[start : start + limit])

    async def list_tasks(self, query: TaskQuery) -> TaskPage:
        status = _rows.STATE_NUMBER[query.status] if query.status is not None else None
        matching = [
            (row.updated_ms, task_id)
            for task_id, row in self._tasks.items()
            if row.tenant == query.tenant
            and (not query.context_id or row.context_id == query.context_id)
            and (status is None or row.state == status)
            and (query.updated_after_ms is None or row.updated_ms >= query.updated_after_ms)
        ]
        after = query.after
        candidates = (
            key for key in matching if after is None or key < (after.updated_ms, after.task_id)
        )
        page = heapq.nlargest(query.page_size + 1, candidates)
        next_cursor = None
        if len(page) > query.page_size:
            del page[query.page_size :]
            next_cursor = Cursor(*page[-1])
        records = self._records(task_id for _, task_id in page)
        return TaskPage(records=records, total_size=len(matching), next_cursor=next_cursor)

    async def count_tasks(self, tenant: str) -> int:
        return self._count_tasks(tenant)

    def _count_tasks(self, tenant: str) -> int:
        return sum(1 for row in self._tasks.values() if row.tenant == tenant)

    async def tasks_in_states(
        self, states: frozenset[TaskState], limit: int = 1000, after_id: str = ""
    ) -> list[TaskRecord]:
        numbers = {_rows.STATE_NUMBER[state] for state in states}
        found = (
            task_id
            for task_id, row in self._tasks.items()
            if row.state in numbers and task_id > after_id
        )
        return self._records(heapq.nsmallest(limit, found))

    async def delete_terminal_before(self, cutoff_ms: int, limit: int = 1000) -> int:
        doomed = [
            task_id
            for task_id, row in self._tasks.items()
            if row.state in _TERMINAL_NUMBERS and row.updated_ms < cutoff_ms
        ][: max(limit, 0)]
        self.delete_tasks(doomed)
        return len(doomed)

    def delete_tasks(self, doomed: Sequence[str]) -> None:
        """Delete these tasks with their logs, push configs, feed entries and the extensions'
        rows of them."""
        for task_id in doomed:
            del self._tasks[task_id]
            self._recent.pop(task_id, None)
            self._ended.pop(task_id, None)
            self._events.pop(task_id, None)
            self._push.pop(task_id, None)
            self._delivery.pop(task_id, None)
        if doomed:  # their feed entries go too (readers may skip a deleted task's entries)
            gone = set(doomed)
            # in place: accord serve froze this list at start (gc.freeze), a new one it would walk
            self._feed[:] = [entry for entry in self._feed if entry.task_id not in gone]
            for state in self._states.values():
                state.forget_tasks(gone)

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        """Delete those of the tenant's tasks that are terminal (:meth:`delete_tasks`)."""
        doomed = []
        for task_id in task_ids:
            row = self._tasks.get(task_id)
            if row is not None and row.tenant == tenant and row.state in _TERMINAL_NUMBERS:
                doomed.append(task_id)
        self.delete_tasks(doomed)
        return doomed

    def _seq(self, task_id: str) -> int:
        row = self._tasks.get(task_id)
        return row.seq if row is not None else 0

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
        self._feed_config(config.tenant, task_id, config_id)
        deliveries = self._delivery.setdefault(task_id, {})
        current = deliveries.get(config_id)
        if current is None:
            if deliver_after is None:
                deliver_after = self._seq(task_id)
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
        self._feed_config(removed.tenant, task_id, config_id)
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
        return PushDelivery(
            config=self._push[task_id][config_id],
            cursor=row.cursor,
            state=row.state,
            failures=row.failures,
            last_error=row.last_error,
            next_attempt_ms=row.next_attempt_ms,
            task_seq=self._seq(task_id),
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
            seq = self._seq(tid)
            if tid not in self._tasks:
                continue
            for cid, row in rows.items():
                if row.state == "active" and row.next_attempt_ms <= now_ms and row.cursor < seq:
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

    def _feed_config(self, tenant: str, task_id: str, config_id: str) -> None:
        self._feed_position += 1
        self._feed.append(_FeedRow(self._feed_position, tenant, task_id, 1, 0, config_id))

    async def read_feed(self, after: int, tenant: str | None, limit: int = 256) -> list[FeedEntry]:
        found: list[FeedEntry] = []
        start = bisect.bisect_right(self._feed, after, key=lambda entry: entry.position)
        for row in self._feed[start:]:
            if len(found) >= limit:
                break
            if tenant is not None and row.tenant != tenant:
                continue
            task_id = row.task_id
            if row.config_id:  # the config as stored now, like a store that reads it back
                config = self._push.get(task_id, {}).get(row.config_id)
                entry = FeedEntry(row.position, row.tenant, task_id, [], row.config_id, config)
            else:
                log = self._events.get(task_id, ())
                events = _rows.events(task_id, log[row.first - 1 : row.last])
                entry = FeedEntry(row.position, row.tenant, task_id, events)
            found.append(entry)
        return found

    # --- operations: what /metrics reads (StoreGauges) --------------------------------------

    async def task_state_counts(self) -> list[tuple[str, TaskState, int]]:
        counts: dict[tuple[str, int], int] = {}
        for row in self._tasks.values():
            key = (row.tenant, row.state)
            counts[key] = counts.get(key, 0) + 1
        return [(tenant, _rows.STATE_BY_NUMBER[state], n) for (tenant, state), n in counts.items()]

    async def push_backlog(self) -> tuple[int, int, int]:
        configs = entries = failing = 0
        for task_id, rows in self._delivery.items():
            seq = self._seq(task_id)
            for row in rows.values():
                if row.state == "failing":
                    failing += 1
                elif row.state == "active" and task_id in self._tasks and row.cursor < seq:
                    configs += 1
                    entries += seq - row.cursor
        return configs, entries, failing

    # --- safe retries (RequestLog) -------------------------------------------------------------

    async def find_request(self, tenant: str, caller: str, key: str) -> StoredRequest | None:
        held = self._requests.get((tenant, caller, key))
        if held is None:
            return None
        return StoredRequest(
            RequestKey(tenant, caller, key, held.fingerprint, held.created_ms),
            held.task_id,
            held.response,
        )

    async def put_request(self, request: StoredRequest) -> StoredRequest | None:
        key = request.key
        held = await self.find_request(key.tenant, key.caller, key.key)
        if held is not None:
            return held
        self._requests[(key.tenant, key.caller, key.key)] = _RequestRow(
            key.fingerprint, key.created_ms, request.task_id, request.response
        )
        return None

    async def delete_requests_before(self, cutoff_ms: int, limit: int = 1000) -> int:
        doomed = [k for k, r in self._requests.items() if r.created_ms < cutoff_ms]
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
