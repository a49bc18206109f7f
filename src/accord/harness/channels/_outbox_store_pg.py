"""The channel outbox in the PostgreSQL database of a PostgresStore (on its pool, through its
extension access), shared by every node: a claim takes due rows with ``FOR UPDATE SKIP
LOCKED`` and leases them in one statement, so two nodes never deliver the same row at the
same time."""

from __future__ import annotations

from collections.abc import Sequence

from accord.harness.channels._outbox_store import COLUMNS, FEED_NAME, Delivery, Owed, delivery_of
from accord.store import PostgresAccess

# The first pending row of each (task, recipient) that is due, oldest retry first; a row
# another node is claiming right now is skipped, not waited for.
_CLAIM = f"""
WITH due AS (
    SELECT d.task_id, d.recipient, d.seq FROM channel_deliveries d
    WHERE d.state = 'pending' AND d.next_attempt_ms <= $1
      AND NOT EXISTS (
          SELECT 1 FROM channel_deliveries e
          WHERE e.task_id = d.task_id AND e.recipient = d.recipient
            AND e.state = 'pending' AND e.seq < d.seq)
    ORDER BY d.next_attempt_ms, d.task_id, d.seq LIMIT $3
    FOR UPDATE OF d SKIP LOCKED)
UPDATE channel_deliveries c SET next_attempt_ms = $1 + $2 FROM due
WHERE c.task_id = due.task_id AND c.recipient = due.recipient AND c.seq = due.seq
RETURNING {", ".join(f"c.{column.strip()}" for column in COLUMNS.split(","))}
"""


class PgChannelOutbox:
    def __init__(self, access: PostgresAccess) -> None:
        self._access = access

    async def position(self) -> int:
        found = await self._access.pool.fetchval(
            "SELECT position FROM channel_feed WHERE name = $1", FEED_NAME
        )
        return int(found or 0)

    async def add(self, owed: Sequence[Owed], position: int) -> None:
        async with self._access.pool.acquire() as conn, conn.transaction():
            if owed:
                await conn.executemany(
                    "INSERT INTO channel_deliveries (task_id, recipient, seq, tenant)"
                    " VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                    [(o.task_id, o.recipient, o.seq, o.tenant) for o in owed],
                )
            await conn.execute(
                "INSERT INTO channel_feed VALUES ($1, $2) ON CONFLICT (name)"
                " DO UPDATE SET position = GREATEST(channel_feed.position, excluded.position)",
                FEED_NAME,
                position,
            )

    async def claim(self, now_ms: int, lease_ms: int, limit: int) -> list[Delivery]:
        rows = await self._access.pool.fetch(_CLAIM, now_ms, lease_ms, max(limit, 0))
        return sorted((delivery_of(row) for row in rows), key=lambda d: (d.task_id, d.seq))

    async def delivered(self, task_id: str, recipient: str, seq: int, now_ms: int) -> None:
        await self._access.pool.execute(
            "UPDATE channel_deliveries SET state = 'delivered', last_error = '',"
            " next_attempt_ms = $4 WHERE task_id = $1 AND recipient = $2 AND seq = $3",
            task_id,
            recipient,
            seq,
            now_ms,
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
        await self._access.pool.execute(
            "UPDATE channel_deliveries SET state = $4, failures = $5, last_error = $6,"
            " next_attempt_ms = $7 WHERE task_id = $1 AND recipient = $2 AND seq = $3",
            task_id,
            recipient,
            seq,
            "pending" if retry_at_ms is not None else "failing",
            failures,
            error,
            retry_at_ms or 0,
        )

    async def forget_delivered(self, before_ms: int) -> int:
        status = await self._access.pool.execute(
            "DELETE FROM channel_deliveries WHERE state = 'delivered' AND next_attempt_ms < $1",
            before_ms,
        )
        return int(status.rsplit(" ", 1)[-1])

    async def deliveries(self, task_id: str) -> list[Delivery]:
        rows = await self._access.pool.fetch(
            f"SELECT {COLUMNS} FROM channel_deliveries WHERE task_id = $1 ORDER BY recipient, seq",
            task_id,
        )
        return [delivery_of(row) for row in rows]
