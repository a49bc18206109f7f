"""The media tables on SQLite (through the store's writer thread and read connection) and
PostgreSQL (the store's pool)."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import AsyncIterator, Sequence

from accord.media._tables import CHUNK, COLUMNS, MediaFile, chunks_of, cut, file_of
from accord.store import PostgresAccess, SqliteAccess


def _span(start: int, end: int) -> tuple[int, int]:
    """The chunk numbers holding ``[start, end)``."""
    return start // CHUNK, max(end - 1, 0) // CHUNK


def _row(file: MediaFile) -> tuple[object, ...]:
    return dataclasses.astuple(file)  # (its fields are COLUMNS, in order)


class SqliteMedia:
    def __init__(self, access: SqliteAccess) -> None:
        self._access = access

    async def put(self, file: MediaFile, data: bytes) -> None:
        chunks = [(file.id, n, chunk) for n, chunk in enumerate(chunks_of(data))]

        def op(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO media_chunks (media_id, n, data) VALUES (?, ?, ?)", chunks
            )
            conn.execute(
                f"INSERT INTO media_files ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _row(file),
            )

        await self._access.write(op)

    async def bind(self, tenant: str, ids: Sequence[str], task_id: str) -> None:
        def op(conn: sqlite3.Connection) -> None:
            for media_id in ids:
                bound = conn.execute(
                    "UPDATE media_files SET task_id = ?"
                    " WHERE id = ? AND tenant = ? AND task_id = ''",
                    (task_id, media_id, tenant),
                ).rowcount
                if bound:
                    conn.execute(
                        "UPDATE media_chunks SET task_id = ? WHERE media_id = ?",
                        (task_id, media_id),
                    )

        await self._access.write(op)

    async def get(self, tenant: str, media_id: str) -> MediaFile | None:
        rows = self._access.read(
            f"SELECT {COLUMNS} FROM media_files WHERE id = ? AND tenant = ?", (media_id, tenant)
        )
        return file_of(rows[0]) if rows else None

    async def read(self, media_id: str, start: int, end: int) -> AsyncIterator[bytes]:
        first, last = _span(start, end)
        for index in range(first, last + 1):  # one chunk a query: a range never reads it all
            rows = self._access.read(
                "SELECT data FROM media_chunks WHERE media_id = ? AND n = ?", (media_id, index)
            )
            if not rows:
                return
            yield cut(bytes(rows[0][0]), index, start, end)

    async def forget_unbound(self, before_ms: int) -> int:
        def op(conn: sqlite3.Connection) -> int:
            ids = [
                row[0]
                for row in conn.execute(
                    "SELECT id FROM media_files WHERE task_id = '' AND created_ms < ?",
                    (before_ms,),
                )
            ]
            for media_id in ids:
                conn.execute("DELETE FROM media_chunks WHERE media_id = ?", (media_id,))
                conn.execute("DELETE FROM media_files WHERE id = ?", (media_id,))
            return len(ids)

        forgotten: int = await self._access.write(op)
        return forgotten


class PgMedia:
    def __init__(self, access: PostgresAccess) -> None:
        self._access = access

    async def put(self, file: MediaFile, data: bytes) -> None:
        chunks = [(file.id, n, chunk) for n, chunk in enumerate(chunks_of(data))]
        async with self._access.pool.acquire() as conn, conn.transaction():
            await conn.executemany(
                "INSERT INTO media_chunks (media_id, n, data) VALUES ($1, $2, $3)", chunks
            )
            await conn.execute(
                f"INSERT INTO media_files ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                *_row(file),
            )

    async def bind(self, tenant: str, ids: Sequence[str], task_id: str) -> None:
        async with self._access.pool.acquire() as conn, conn.transaction():
            bound = await conn.fetch(
                "UPDATE media_files SET task_id = $1"
                " WHERE id = ANY($2::text[]) AND tenant = $3 AND task_id = '' RETURNING id",
                task_id,
                list(ids),
                tenant,
            )
            if bound:
                await conn.execute(
                    "UPDATE media_chunks SET task_id = $1 WHERE media_id = ANY($2::text[])",
                    task_id,
                    [row[0] for row in bound],
                )

    async def get(self, tenant: str, media_id: str) -> MediaFile | None:
        row = await self._access.pool.fetchrow(
            f"SELECT {COLUMNS} FROM media_files WHERE id = $1 AND tenant = $2", media_id, tenant
        )
        return file_of(row) if row is not None else None

    async def read(self, media_id: str, start: int, end: int) -> AsyncIterator[bytes]:
        first, last = _span(start, end)
        for index in range(first, last + 1):
            data = await self._access.pool.fetchval(
                "SELECT data FROM media_chunks WHERE media_id = $1 AND n = $2", media_id, index
            )
            if data is None:
                return
            yield cut(bytes(data), index, start, end)

    async def forget_unbound(self, before_ms: int) -> int:
        async with self._access.pool.acquire() as conn, conn.transaction():
            ids = [
                row[0]
                for row in await conn.fetch(
                    "DELETE FROM media_files WHERE task_id = '' AND created_ms < $1 RETURNING id",
                    before_ms,
                )
            ]
            if ids:
                await conn.execute("DELETE FROM media_chunks WHERE media_id = ANY($1::text[])", ids)
            return len(ids)
