"""The channel outbox: channel messages owed to agent participants, one row per (task,
recipient, message), in the task store's database.

The harness marks each channel message it stores with the agents it goes to; a follower of
the store's global feed (``TaskStore.read_feed``, written in the appending transaction)
finds those messages and adds a row for each recipient here, moving its position in the
feed in the same transaction. So a message is owed from the moment its append commits,
whatever happens to the process after: a restart resumes the feed where it stopped.

A deliverer claims due rows (a lease: ``next_attempt_ms`` moves past the lease, so no other
claimer takes it meanwhile), sends, and marks the row delivered, or failed with a retry time
(``failing`` once it gives up). Rows of one (task, recipient) are claimed in message order:
one whose predecessor is still pending waits for it. Delivered rows stay a while (a row
added again, after a crash between the delivery and the position's move, is ignored) and
are then forgotten; rows go with their task.

The tables are the task store's ``channels`` extension (:data:`CHANNEL_TABLES`, migrations in
:mod:`accord.harness.channels._outbox_schema`); a memory store keeps a
:class:`MemoryChannelOutbox` as its state of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from accord.harness.channels import _outbox_schema as outbox_schema
from accord.store import StoreExtension, TaskRows, TaskStore

OutboxState = Literal["pending", "delivered", "failing"]
FEED_NAME = "deliveries"  # the follower's name in ``channel_feed``
# The columns of a Delivery, in its fields' order (the SQL outboxes read them so).
COLUMNS = "tenant, task_id, recipient, seq, state, failures, last_error, next_attempt_ms"


@dataclass(frozen=True, slots=True)
class Owed:
    """A message owed to ``recipient``: the event ``seq`` of task ``task_id``."""

    tenant: str
    task_id: str
    recipient: str
    seq: int


@dataclass(frozen=True, slots=True)
class Delivery:
    tenant: str
    task_id: str
    recipient: str
    seq: int
    state: OutboxState
    failures: int  # failed attempts so far
    last_error: str  # the latest failure ("" after a delivery)
    next_attempt_ms: int  # not claimable before (a lease or a retry); when it was delivered


def delivery_of(row: Any) -> Delivery:
    """A row of :data:`COLUMNS` (a tuple, or an asyncpg Record)."""
    tenant, task_id, recipient, seq, state, failures, last_error, next_attempt_ms = row
    return Delivery(
        tenant, task_id, recipient, int(seq), state, int(failures), last_error, int(next_attempt_ms)
    )


class ChannelOutbox(Protocol):
    async def position(self) -> int:
        """The follower's position in the feed (every entry up to it has its rows)."""
        ...

    async def add(self, owed: Sequence[Owed], position: int) -> None:
        """Rows for ``owed`` (those held already are left as they are) and the position
        moved to ``position`` (never back), in one transaction."""
        ...

    async def claim(self, now_ms: int, lease_ms: int, limit: int) -> list[Delivery]:
        """Up to ``limit`` pending rows due by ``now_ms``, each the first pending one of its
        (task, recipient), leased until ``now_ms + lease_ms``."""
        ...

    async def delivered(self, task_id: str, recipient: str, seq: int, now_ms: int) -> None: ...

    async def failed(
        self,
        task_id: str,
        recipient: str,
        seq: int,
        *,
        failures: int,
        error: str,
        retry_at_ms: int | None,
    ) -> None:
        """A failed attempt: retried at ``retry_at_ms``, or ``failing`` (given up) when it
        is None."""
        ...

    async def forget_delivered(self, before_ms: int) -> int:
        """Drop rows delivered before ``before_ms``; how many."""
        ...

    async def deliveries(self, task_id: str) -> list[Delivery]:
        """The task's rows, by recipient then message (operators and tests read them)."""
        ...


def channel_outbox(store: TaskStore) -> ChannelOutbox:
    """The channel outbox beside ``store`` (same database, same lifetime). The first call
    registers the outbox's tables with ``store``, which must not be open yet."""
    access = store.extend(CHANNEL_TABLES)
    if access.dialect == "sqlite":
        from accord.harness.channels._outbox_store_sqlite import SqliteChannelOutbox

        return SqliteChannelOutbox(access)
    if access.dialect == "postgresql":
        from accord.harness.channels._outbox_store_pg import PgChannelOutbox

        return PgChannelOutbox(access)
    return access.state  # (one per store, as the SQL ones share a database)


class MemoryChannelOutbox:
    """In memory, beside a MemoryStore (tests, throwaway runs)."""

    def __init__(self) -> None:
        self._position = 0
        self._rows: dict[tuple[str, str, int], Delivery] = {}

    async def position(self) -> int:
        return self._position

    async def add(self, owed: Sequence[Owed], position: int) -> None:
        for item in owed:
            key = (item.task_id, item.recipient, item.seq)
            if key not in self._rows:
                self._rows[key] = Delivery(
                    item.tenant, item.task_id, item.recipient, item.seq, "pending", 0, "", 0
                )
        self._position = max(self._position, position)

    async def claim(self, now_ms: int, lease_ms: int, limit: int) -> list[Delivery]:
        first: dict[tuple[str, str], Delivery] = {}
        for row in sorted(self._rows.values(), key=lambda r: r.seq):
            if row.state == "pending":
                first.setdefault((row.task_id, row.recipient), row)
        due = sorted(
            (row for row in first.values() if row.next_attempt_ms <= now_ms),
            key=lambda r: (r.next_attempt_ms, r.task_id, r.seq),
        )[: max(limit, 0)]
        claimed = []
        for row in due:
            leased = dataclasses.replace(row, next_attempt_ms=now_ms + lease_ms)
            self._rows[(row.task_id, row.recipient, row.seq)] = leased
            claimed.append(leased)
        return claimed

    async def delivered(self, task_id: str, recipient: str, seq: int, now_ms: int) -> None:
        row = self._rows.get((task_id, recipient, seq))
        if row is not None:
            self._rows[(task_id, recipient, seq)] = dataclasses.replace(
                row, state="delivered", last_error="", next_attempt_ms=now_ms
            )

    async def failed(
        self,
        task_id: str,
        recipient: str,
        seq: int,
        *,
        failures: int,
        error: str,
        retry_at_ms: int | None,
    ) -> None:
        row = self._rows.get((task_id, recipient, seq))
        if row is not None:
            self._rows[(task_id, recipient, seq)] = dataclasses.replace(
                row,
                state="pending" if retry_at_ms is not None else "failing",
                failures=failures,
                last_error=error,
                next_attempt_ms=retry_at_ms or 0,
            )

    async def forget_delivered(self, before_ms: int) -> int:
        gone = [
            key
            for key, row in self._rows.items()
            if row.state == "delivered" and row.next_attempt_ms < before_ms
        ]
        for key in gone:
            del self._rows[key]
        return len(gone)

    async def deliveries(self, task_id: str) -> list[Delivery]:
        rows = [row for row in self._rows.values() if row.task_id == task_id]
        return sorted(rows, key=lambda r: (r.recipient, r.seq))

    def forget_tasks(self, task_ids: Collection[str]) -> None:
        """The store deleted these tasks: their rows go too."""
        for key in [key for key in self._rows if key[0] in task_ids]:
            del self._rows[key]


CHANNEL_TABLES: StoreExtension[MemoryChannelOutbox] = StoreExtension(
    name="channels",
    memory=MemoryChannelOutbox,
    sqlite=outbox_schema.SQLITE,
    postgresql=outbox_schema.POSTGRESQL,
    task_rows=(TaskRows("channel_deliveries"),),
)
