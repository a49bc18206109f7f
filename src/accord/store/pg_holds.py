"""Which node runs a task, for PostgreSQL clusters: session advisory locks.

A node holds a lock keyed by the task id for as long as an executor of its own runs the task.
The lock lives in one dedicated connection, so it disappears by itself when the node dies
(PostgreSQL ends the session). Recovery on any node fails a SUBMITTED or WORKING task only if
nobody holds its lock, so starting a node no longer fails the tasks live nodes are running,
and a dead node's tasks are found by the next periodic recovery.
"""

from __future__ import annotations

import asyncio
import logging

import asyncpg

log = logging.getLogger("accord.store")

_KEY = "hashtextextended($1, 0)"


class AdvisoryHolds:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._conn: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()  # one asyncpg connection runs one query at a time
        self._held: set[str] = set()

    async def _connection(self) -> asyncpg.Connection:
        if self._conn is None or self._conn.is_closed():
            self._conn = await asyncpg.connect(self.dsn)
            # A new session holds nothing: take back what this node still runs.
            for task_id in list(self._held):
                if not await self._conn.fetchval(f"SELECT pg_try_advisory_lock({_KEY})", task_id):
                    self._held.discard(task_id)
        return self._conn

    async def hold(self, task_id: str) -> bool:
        """Mark the task as run by this node; False if another node holds it already."""
        async with self._lock:
            if task_id in self._held:
                return True
            conn = await self._connection()
            taken = bool(await conn.fetchval(f"SELECT pg_try_advisory_lock({_KEY})", task_id))
            if taken:
                self._held.add(task_id)
            return taken

    async def release(self, task_id: str) -> None:
        async with self._lock:
            if task_id not in self._held:
                return
            self._held.discard(task_id)
            conn = await self._connection()
            await conn.fetchval(f"SELECT pg_advisory_unlock({_KEY})", task_id)

    async def held_elsewhere(self, task_id: str) -> bool:
        """True while another live node holds the task."""
        async with self._lock:
            if task_id in self._held:
                return False
            conn = await self._connection()
            if await conn.fetchval(f"SELECT pg_try_advisory_lock({_KEY})", task_id):
                await conn.fetchval(f"SELECT pg_advisory_unlock({_KEY})", task_id)
                return False
            return True

    async def close(self) -> None:
        async with self._lock:
            conn, self._conn = self._conn, None
            self._held.clear()
            if conn is not None and not conn.is_closed():
                await conn.close()
