"""The channel outbox in the SQLite file of a SqliteStore, through its extension access:
writes on its writer thread (they take turns with task writes and commit in its groups),
reads on its read connection."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from accord.harness.channels._outbox_store import COLUMNS, FEED_NAME, Delivery, Owed, delivery_of
from accord.store import SqliteAccess

# The first pending row of each (task, recipient) that is due, oldest retry first.
_CLAIM = f"""
UPDATE channel_deliveries SET next_attempt_ms = ?
WHERE (task_id, recipient, seq) IN (
    SELECT d.task_id, d.recipient, d.seq FROM channel_deliveries d
    WHERE d.state = 'pending' AND d.next_attempt_ms <= ?
      AND NOT EXISTS (
          SELECT 1 FROM channel_deliveries e
          WHERE e.task_id = d.task_id AND e.recipient = d.recipient
            AND e.state = 'pending' AND e.seq < d.seq)
    ORDER BY d.next_attempt_ms, d.task_id, d.seq LIMIT ?)
RETURNING {COLUMNS}
"""


class SqliteChannelOutbox:
    def __init__(self, access: SqliteAccess) -> None:
        self._access = access

    async def position(self) -> int:
        rows = self._access.read("SELECT position FROM channel_feed WHERE name = ?", (FEED_NAME,))
        return int(rows[0][0]) if rows else 0

    async def add(self, owed: Sequence[Owed], position: int) -> None:
        rows = [(o.task_id, o.recipient, o.seq, o.tenant) for o in owed]

        def op(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO channel_deliveries (task_id, recipient, seq, tenant)"
                " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                rows,
            )
            conn.execute(
                "INSERT INTO channel_feed VALUES (?, ?) ON CONFLICT (name)"
                " DO UPDATE SET position = MAX(position, excluded.position)",
                (FEED_NAME, position),
            )

        await self._access.write(op)

    async def claim(self, now_ms: int, lease_ms: int, limit: int) -> list[Delivery]:
        def op(conn: sqlite3.Connection) -> list[Delivery]:
            rows = conn.execute(_CLAIM, (now_ms + lease_ms, now_ms, max(limit, 0))).fetchall()
            return sorted((delivery_of(row) for row in rows), key=lambda d: (d.task_id, d.seq))

        found: list[Delivery] = await self._access.write(op)
        return found

    async def delivered(self, task_id: str, recipient: str, seq: int, now_ms: int) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE channel_deliveries SET state = 'delivered', last_error = '',"
                " next_attempt_ms = ? WHERE task_id = ? AND recipient = ? AND seq = ?",
                (now_ms, task_id, recipient, seq),
            )

        await self._access.write(op)

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
        state = "pending" if retry_at_ms is not None else "failing"

        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE channel_deliveries SET state = ?, failures = ?, last_error = ?,"
                " next_attempt_ms = ? WHERE task_id = ? AND recipient = ? AND seq = ?",
                (state, failures, error, retry_at_ms or 0, task_id, recipient, seq),
            )

        await self._access.write(op)

    async def forget_delivered(self, before_ms: int) -> int:
        def op(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM channel_deliveries WHERE state = 'delivered' AND next_attempt_ms < ?",
                (before_ms,),
            ).rowcount

        forgotten: int = await self._access.write(op)
        return forgotten

    async def deliveries(self, task_id: str) -> list[Delivery]:
        rows = self._access.read(
            f"SELECT {COLUMNS} FROM channel_deliveries WHERE task_id = ? ORDER BY recipient, seq",
            (task_id,),
        )
        return [delivery_of(row) for row in rows]
