"""The TaskStore interface every backend implements (memory, SQLite, PostgreSQL).

A store keeps, per task: the snapshot (a :class:`TaskRecord`), the append-only event log, and
the task's push-notification configs. It knows nothing of the lifecycle: the core decides, the
store records. Reads that serve a client are scoped by tenant in the query itself, so another
tenant's task is never loaded ("not found").

Concurrency: ``append`` is optimistic. It succeeds only if the stored snapshot's ``seq`` equals
``expected_seq`` (0 for a new task); otherwise it raises :class:`SeqConflict` and writes
nothing. Appending the events and replacing the snapshot is one transaction, durable when the
call returns (that is what lets the engine acknowledge it).

Limits: ``append`` (creating a task) and ``put_push_config`` (adding a config) take an optional
limit, counted and enforced in the writing transaction, so concurrent writers (in one process
or on several nodes sharing the database) cannot exceed it together; over it they raise
:class:`LimitExceeded` and write nothing. The engine still checks before deciding, which
refuses the common case without a write.
"""

from __future__ import annotations

import datetime
import secrets
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from accord.core import Event, PushConfigRecord, RequestKey, TaskRecord
from accord.core.views import Cursor, TaskQuery
from accord.errors import AccordError
from accord.wire import TaskState

if TYPE_CHECKING:
    from accord.bus import LocalBus
    from accord.store._claims import ClaimTable
    from accord.store._extensions import S, StoreAccess, StoreExtension


def new_secret() -> bytes:
    """A fresh value for :meth:`TaskStore.shared_secret`."""
    return secrets.token_bytes(32)


class StoreError(AccordError):
    """A storage failure the caller cannot fix by retrying the same call at once. A plain
    StoreError (the store cannot read or write now: database unreachable, disk full) may
    pass later, and a client is told so (:func:`unavailable`); its subclasses are refusals
    with a meaning of their own."""


# What a backend's driver raises, unwrapped, when its server cannot answer now (unreachable,
# restarting, out of disk); each backend adds its driver's classes when imported.
_UNAVAILABLE: list[type[BaseException]] = []


def register_unavailable(*kinds: type[BaseException]) -> None:
    """Count ``kinds`` as "the store cannot answer now" (:func:`unavailable`)."""
    _UNAVAILABLE.extend(kind for kind in kinds if kind not in _UNAVAILABLE)


def unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the store cannot read or write now (worth a retry later), rather
    than a refusal or a bug: a plain :class:`StoreError`, or a driver error a backend
    registered (PostgreSQL: the server unreachable, restarting, out of disk, …)."""
    return type(exc) is StoreError or isinstance(exc, tuple(_UNAVAILABLE))


class SeqConflict(StoreError):
    """Another writer appended to the task first; re-read it and decide again."""

    def __init__(self, task_id: str, expected: int, actual: int) -> None:
        super().__init__(f"task {task_id!r}: expected seq {expected}, store has {actual}")
        self.task_id = task_id
        self.expected = expected
        self.actual = actual


LimitName = Literal["tasks_per_tenant", "push_configs_per_task"]


class LimitExceeded(StoreError):
    """A write would take ``limit`` past its value; nothing was written."""

    def __init__(self, limit: LimitName, value: int, task_id: str) -> None:
        what = "tasks" if limit == "tasks_per_tenant" else "push-notification configs"
        holder = "the tenant" if limit == "tasks_per_tenant" else f"task {task_id!r}"
        super().__init__(f"{holder} already holds {value} {what}")
        self.limit = limit
        self.value = value
        self.task_id = task_id


class TaskGone(StoreError):
    """A push config was put for a task the store does not hold (retention deleted it while
    the config was being added); nothing was written."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {task_id!r} is not stored")
        self.task_id = task_id


@dataclass(frozen=True, slots=True)
class TaskPage:
    records: list[TaskRecord]
    total_size: int  # tasks matching the query's filters, before paging
    next_cursor: Cursor | None  # None on the last page


DeliveryState = Literal["active", "failing", "done"]


@dataclass(frozen=True, slots=True)
class PushDelivery:
    """Where delivery to one push config stands (the durable outbox is the task's log plus
    this cursor; see ``claim_push_deliveries``)."""

    config: PushConfigRecord
    cursor: int  # every event with seq <= cursor was delivered (or is not streamed)
    state: DeliveryState  # failing: gave up after too many failures; done: terminal, delivered
    failures: int  # consecutive failed attempts since the last success
    last_error: str  # the latest failure, free of secrets; "" after a success
    next_attempt_ms: int  # not claimable before this: a retry's backoff or a holder's lease
    task_seq: int  # the task's last seq when this was read (0 if the task is gone)


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One committed change, as the global feed orders it (remote agents read this).

    An append carries its ``events`` (in seq order); a push-config change carries
    ``config_id`` and the ``config`` as stored when the feed is read (None once deleted).
    """

    position: int
    tenant: str
    task_id: str
    events: list[Event]
    config_id: str = ""
    config: PushConfigRecord | None = None


class TaskStore(Protocol):
    """Async interface; every method may be called concurrently from one event loop."""

    def extend(self, extension: StoreExtension[S]) -> StoreAccess[S]:
        """Keep a feature's own tables in this store (:mod:`accord.store._extensions`): their
        migrations run at :meth:`open`, their rows of a task go with it. Called before
        ``open`` (StoreError after, unless ``extension`` is registered already); returns the
        feature's way into the store (its ``dialect`` says which)."""

    async def open(self) -> None:
        """Create or migrate the schema (the store's, then its extensions'); must be called
        before anything else."""

    async def close(self) -> None:
        """Flush and release everything. Idempotent."""

    async def ping(self) -> None:
        """Raise when the store cannot serve now (closed, database unreachable): a cheap
        round trip for readiness probes."""

    # --- tasks and their logs --------------------------------------------------------------

    def append(
        self,
        record: TaskRecord,
        events: Sequence[Event],
        expected_seq: int,
        *,
        tenant_task_limit: int | None = None,
        requests: Sequence[RequestKey] = (),
    ) -> Awaitable[None]:
        """Atomically add ``events`` (consecutive seqs following ``expected_seq``) to the
        task's log and store ``record`` (whose ``seq`` is the last event's) as its snapshot.
        ``expected_seq`` 0 creates the task; then, with ``tenant_task_limit``, the creation
        fails with LimitExceeded if the tenant already holds that many tasks, counted in the
        same transaction (creations committed just before, by any writer, count). Raises
        SeqConflict, LimitExceeded, StoreError.

        ``requests``: keys of the requests these events carry out (safe retries), recorded
        in the same transaction with this task's id; DuplicateRequest, and nothing written,
        when the store holds one of them already.

        An ``async def`` implements it, queueing the write before its first ``await`` (the
        engine runs each call as a task, in call order); so does a plain method that queues
        the write and returns an asyncio future, which the engine waits on without a task
        (the SQLite store; the in-memory store writes at once and returns a done one)."""

    async def get_task(self, task_id: str, tenant: str | None) -> TaskRecord | None:
        """The snapshot, or None. ``tenant`` None reads across tenants (agent side and
        internal use only); otherwise a task of another tenant is None."""

    async def read_events(self, task_id: str, after_seq: int, limit: int = 1000) -> list[Event]:
        """Events with ``seq > after_seq`` in order, at most ``limit`` of them."""

    async def list_tasks(self, query: TaskQuery) -> TaskPage:
        """One page of the Tasks view: ``query``'s filters, newest status first (ties by id
        descending), after ``query.after``. Records carry the full task; the caller trims
        history and artifacts. Cost must not grow with the number of stored tasks beyond
        the index lookup (totalSize included)."""

    async def count_tasks(self, tenant: str) -> int:
        """How many tasks ``tenant`` holds (for the tasks-per-tenant limit)."""

    async def tasks_in_states(
        self, states: frozenset[TaskState], limit: int = 1000, after_id: str = ""
    ) -> list[TaskRecord]:
        """Tasks of every tenant in one of ``states``, ordered by id, ids > ``after_id``
        (recovery scans with this)."""

    async def delete_terminal_before(self, cutoff_ms: int, limit: int = 1000) -> int:
        """Delete up to ``limit`` terminal tasks whose status time is before ``cutoff_ms``,
        with their logs and push configs. Returns how many were deleted."""

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        """Delete those of ``tenant``'s tasks ``task_ids`` names that are terminal, each with
        its log, push configs, feed entries and every store extension's rows of it (the one
        way a task is deleted, shared with :meth:`delete_terminal_before`); returns the ids
        deleted (a task another node deletes meanwhile is not among them)."""

    # --- push-notification configs ---------------------------------------------------------

    async def put_push_config(
        self,
        config: PushConfigRecord,
        deliver_after: int | None = None,
        *,
        max_per_task: int | None = None,
    ) -> None:
        """Insert, or replace the config with the same (task id, config id).

        Fails with TaskGone when the task is not stored, checked in the same transaction (so
        a config never outlives its task, whatever retention does at the same moment). With
        ``max_per_task``, inserting a new config fails with LimitExceeded when the task
        already holds that many, counted in the same transaction; replacing is always allowed.

        A new config's delivery cursor starts at ``deliver_after`` or, when it is None, at the
        task's last seq read in the same transaction (only later events are delivered); its
        state is ``active``. Replacing keeps the cursor and makes the config ``active`` again
        with no failures and ``next_attempt_ms`` 0: an owner who re-registers a failing webhook
        resumes its delivery where it stopped, nothing lost."""

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None: ...

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        """The task's configs, oldest first."""

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        """True if a config was deleted (with its delivery state); deleting a missing one is
        not an error."""

    async def all_push_configs(
        self, limit: int = 1000, after: tuple[str, str] = ("", "")
    ) -> list[PushConfigRecord]:
        """Every config of every tenant, ordered by (task id, config id), after ``after``."""

    # --- push delivery (the durable outbox) ------------------------------------------------
    #
    # Each config carries a delivery cursor and a small state next to it (PushDelivery). A
    # dispatcher claims due configs, posts the task's streamed events after the cursor in
    # order, and moves the cursor after each success. A claim is a lease: the claimed rows get
    # ``next_attempt_ms = now_ms + lease_ms``, so no other claimer (another dispatcher task,
    # another node) takes them until the holder gives them back or the lease runs out (the
    # holder died: the next claimer resumes from the durable cursor, at least once).

    async def claim_push_deliveries(
        self, now_ms: int, lease_ms: int, limit: int = 100, task_id: str | None = None
    ) -> list[PushDelivery]:
        """Claim up to ``limit`` due deliveries, of one task when ``task_id`` is given.

        Due: state ``active``, ``next_attempt_ms <= now_ms``, and cursor < the task's seq
        (there is something left to deliver). Ordered by ``next_attempt_ms``, then (task id,
        config id). Selecting and setting ``next_attempt_ms = now_ms + lease_ms`` on the
        returned rows is one transaction, so two concurrent claims never return the same row
        while its lease holds. The returned values are those after the claim.

        PostgreSQL: ``UPDATE push_configs SET next_attempt_ms = $now + $lease WHERE (task_id,
        config_id) IN (SELECT p.task_id, p.config_id FROM push_configs p JOIN tasks t ON ...
        WHERE <due> ORDER BY ... LIMIT $n FOR UPDATE OF p SKIP LOCKED) RETURNING ...``; a row
        another transaction is claiming is skipped, not waited for."""

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
        """Record what the holder of a claim did: the cursor becomes max(stored, ``cursor``)
        (it never moves back, so a holder whose lease ran out cannot undo a newer holder's
        progress); the other fields are set as given. The holder extends its lease by passing
        a future ``next_attempt_ms``, gives the row back with 0 (or a retry time). Returns
        False when the config no longer exists (deleted, or its task removed by retention):
        the holder stops. One row, one statement (PostgreSQL: a plain UPDATE)."""

    async def get_push_delivery(self, task_id: str, config_id: str) -> PushDelivery | None:
        """One config's delivery state, or None."""

    async def list_push_deliveries(
        self, state: DeliveryState, limit: int = 100, after: tuple[str, str] = ("", "")
    ) -> list[PushDelivery]:
        """Configs of every tenant in ``state``, ordered by (task id, config id), after
        ``after`` (operators list failing webhooks with this)."""

    # --- the global feed ---------------------------------------------------------------------

    async def read_feed(self, after: int, tenant: str | None, limit: int = 256) -> list[FeedEntry]:
        """Committed changes with ``position > after``, in position order, at most ``limit``
        of them; only ``tenant``'s when it is not None.

        Every ``append`` and every push-config put or delete is one entry, written in the
        same transaction as the change itself. Positions are integers that only grow, in
        commit order: once a reader has seen position p, no entry with a position <= p
        appears later (a backend with concurrent writers must assign positions under a lock,
        or hide positions above the oldest uncommitted one). Entries whose task has since
        been deleted may be skipped. A reader resumes with the last position it saw."""

    async def shared_secret(self, name: str) -> bytes:
        """A random 32-byte secret kept under ``name``: made on first use, then the same for
        every process that opens this store (the nodes of a PostgreSQL cluster agree on it;
        a memory store's lives as long as it does). Signs what the server hands out and must
        recognise later, such as ListTasks page tokens."""


@runtime_checkable
class TaskHolds(Protocol):
    """Optional: stores shared by several nodes say which node runs a task.

    ``hold_task`` marks the task as run by this process until ``release_task`` or the
    process's death; False if another process holds it already (it runs the task too), and
    then the store takes the hold as soon as that process lets go, unless released first.
    ``task_held_elsewhere`` is true while another live process holds it.
    Recovery fails only tasks nobody holds. Single-process stores (memory, SQLite) do not
    implement this: every task left running there belongs to a dead process."""

    async def hold_task(self, task_id: str) -> bool: ...

    async def release_task(self, task_id: str) -> None: ...

    async def task_held_elsewhere(self, task_id: str) -> bool: ...


@runtime_checkable
class NodeLosses(Protocol):
    """Optional, beside TaskHolds: a store shared by several nodes notices another node's
    death (PostgreSQL: its lock session ended), so that recovery takes the tasks it ran at
    once instead of at its next periodic sweep."""

    async def node_lost(self, within_s: float, every_s: float) -> bool:
        """Look every ``every_s`` seconds, for up to ``within_s``; True as soon as a node
        that held tasks is gone, False when none went. Never raises (a look that fails
        counts as nothing seen)."""


@runtime_checkable
class TaskSnapshots(Protocol):
    """Optional: stores that keep each snapshot as the ProtoJSON bytes of its Task (SQLite,
    PostgreSQL) hand them out unread, so a JSON response can carry them as they are instead
    of decoding and re-encoding the task (GetTask without historyLength)."""

    async def get_snapshot(self, task_id: str, tenant: str) -> bytes | None:
        """The task's snapshot as stored, or None (also for another tenant's task)."""


# --- several nodes on one store -------------------------------------------------------------


@runtime_checkable
class SharedStore(Protocol):
    """Optional: a store several nodes share (PostgreSQL, docs/scale-out.md): the bus that
    wakes the followers of every node when one of them appends, and the table of remote
    workers' claims that every node grants and reaps."""

    def bus(self) -> LocalBus:
        """A bus on this store, started and closed with it."""

    def claim_table(self) -> ClaimTable:
        """The claims of remote workers (``--agent remote``), shared by the nodes."""

    async def nodes(self) -> list[tuple[str, str, datetime.datetime]]:
        """The nodes connected now, as the database sees their buses' connections: (node,
        address, connected since), oldest first."""


# --- operations: what /metrics reads of a store (docs/operations.md): StoreGauges, declared in
# accord.telemetry._exposition (the store implements it; telemetry stays below the store) -------


# --- safe retries: requests already answered (docs/operations.md, "Safe retries") -----------


@dataclass(frozen=True, slots=True)
class StoredRequest:
    """A request as first carried out: the task it created or continued ("" when none), and
    the answer itself when that is not the task's state (a direct reply, a push config)."""

    key: RequestKey
    task_id: str = ""
    response: bytes | None = None


class DuplicateRequest(StoreError):
    """An append carried a request key the store already holds: that request was carried out
    already (by another node, or a concurrent retry); nothing was written."""

    def __init__(self, key: RequestKey, task_id: str) -> None:
        super().__init__(f"request {key.key!r} of {key.caller!r} was carried out already")
        self.key = key
        self.task_id = task_id


@runtime_checkable
class RequestLog(Protocol):
    """The requests a store remembers, for safe retries. ``append(…, requests=[…])`` records
    keys in the same transaction as the events they caused (DuplicateRequest, and nothing
    written, when one is held already); these methods read, record and forget them."""

    async def find_request(self, tenant: str, caller: str, key: str) -> StoredRequest | None:
        """The request recorded under (tenant, caller, key), or None."""

    async def put_request(self, request: StoredRequest) -> StoredRequest | None:
        """Record ``request`` unless its key is held: then nothing is written and the held
        one is returned."""

    async def delete_requests_before(self, cutoff_ms: int, limit: int = 1000) -> int:
        """Forget up to ``limit`` requests first seen before ``cutoff_ms``; how many."""
