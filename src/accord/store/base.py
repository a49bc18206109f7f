"""The TaskStore interface every backend implements (memory, SQLite, PostgreSQL).

A store keeps, per task: the snapshot (a :class:`TaskRecord`), the append-only event log, and
the task's push-notification configs. It knows nothing of the lifecycle: the core decides, the
store records. Reads that serve a client are scoped by tenant in the query itself, so another
tenant's task is never loaded ("not found").

Concurrency: ``append`` is optimistic. It succeeds only if the stored snapshot's ``seq`` equals
``expected_seq`` (0 for a new task); otherwise it raises :class:`SeqConflict` and writes
nothing. Appending the events and replacing the snapshot is one transaction, durable when the
call returns (that is what lets the engine acknowledge it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from accord.core.events import Event
from accord.core.records import PushConfigRecord, TaskRecord
from accord.core.views import Cursor, TaskQuery
from accord.wire.model import TaskState


class StoreError(Exception):
    """A storage failure the caller cannot fix by retrying the same call."""


class SeqConflict(StoreError):
    """Another writer appended to the task first; re-read it and decide again."""

    def __init__(self, task_id: str, expected: int, actual: int) -> None:
        super().__init__(f"task {task_id!r}: expected seq {expected}, store has {actual}")
        self.task_id = task_id
        self.expected = expected
        self.actual = actual


@dataclass(frozen=True, slots=True)
class TaskPage:
    records: list[TaskRecord]
    total_size: int  # tasks matching the query's filters, before paging
    next_cursor: Cursor | None  # None on the last page


class TaskStore(Protocol):
    """Async interface; every method may be called concurrently from one event loop."""

    async def open(self) -> None:
        """Create or migrate the schema; must be called before anything else."""

    async def close(self) -> None:
        """Flush and release everything. Idempotent."""

    # --- tasks and their logs --------------------------------------------------------------

    async def append(self, record: TaskRecord, events: Sequence[Event], expected_seq: int) -> None:
        """Atomically add ``events`` (consecutive seqs following ``expected_seq``) to the
        task's log and store ``record`` (whose ``seq`` is the last event's) as its snapshot.
        ``expected_seq`` 0 creates the task. Raises SeqConflict, StoreError."""

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

    # --- push-notification configs ---------------------------------------------------------

    async def put_push_config(self, config: PushConfigRecord) -> None:
        """Insert, or replace the config with the same (task id, config id)."""

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None: ...

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        """The task's configs, oldest first."""

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        """True if a config was deleted; deleting a missing one is not an error."""

    async def all_push_configs(
        self, limit: int = 1000, after: tuple[str, str] = ("", "")
    ) -> list[PushConfigRecord]:
        """Every config of every tenant, ordered by (task id, config id), after ``after``."""
