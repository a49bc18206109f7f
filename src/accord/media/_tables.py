"""Media bytes in the task store's database: the ``media`` store extension.

Two tables, both listed in the extension's ``task_rows`` so that deleting a task (retention,
``accord admin purge``) deletes its files in the same transaction:

- ``media_files``: one row per file (its id, tenant, task, who uploaded it, media type,
  file name, size, SHA-256, when);
- ``media_chunks``: its bytes in chunks of :data:`CHUNK` bytes (SQLite ``BLOB``, PostgreSQL
  ``bytea``), so that a range is read without reading the whole file.

A file is stored before the message that carries it is admitted, with no task (``task_id``
``''``): then only its uploader may read it. Once the message is taken the file is bound to
its task; files never bound (a refused message, an upload never sent) are forgotten after
:data:`UNBOUND_TTL_MS`. A memory store keeps a :class:`MemoryMedia`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from accord.store import Migrations, StoreExtension, TaskRows, TaskStore

CHUNK = 256 * 1024  # bytes per stored chunk
UNBOUND_TTL_MS = 3_600_000  # a file no message took is forgotten after an hour

COLUMNS = "id, tenant, task_id, owner, media_type, filename, size, sha256, created_ms"


@dataclass(frozen=True, slots=True)
class MediaFile:
    """What the store knows of one file (``task_id`` ``''``: not bound to a task yet)."""

    id: str
    tenant: str
    task_id: str
    owner: str  # who stored it (accord.media._ingest.owner_of)
    media_type: str
    filename: str
    size: int
    sha256: str
    created_ms: int


def file_of(row: Any) -> MediaFile:
    """A row of :data:`COLUMNS` (a tuple, or an asyncpg Record)."""
    id_, tenant, task_id, owner, media_type, filename, size, sha256, created_ms = row
    return MediaFile(
        id_, tenant, task_id, owner, media_type, filename, int(size), sha256, int(created_ms)
    )


def chunks_of(data: bytes) -> list[bytes]:
    return [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)] or [b""]


class MediaStore(Protocol):
    async def put(self, file: MediaFile, data: bytes) -> None:
        """Store ``file`` (unbound) with its bytes."""
        ...

    async def bind(self, tenant: str, ids: Sequence[str], task_id: str) -> None:
        """The unbound files ``ids`` of ``tenant`` now belong to ``task_id``."""
        ...

    async def get(self, tenant: str, media_id: str) -> MediaFile | None: ...

    def read(self, media_id: str, start: int, end: int) -> AsyncIterator[bytes]:
        """The file's bytes from ``start`` up to ``end`` (exclusive), a chunk at a time."""
        ...

    async def forget_unbound(self, before_ms: int) -> int:
        """Drop the files no task took that were stored before ``before_ms``; how many."""
        ...


def media_store(store: TaskStore) -> MediaStore:
    """The media tables beside ``store`` (same database, same lifetime). The first call
    registers them with ``store``, which must not be open yet."""
    access = store.extend(MEDIA_TABLES)
    if access.dialect == "sqlite":
        from accord.media._tables_sql import SqliteMedia

        return SqliteMedia(access)
    if access.dialect == "postgresql":
        from accord.media._tables_sql import PgMedia

        return PgMedia(access)
    return access.state


class MemoryMedia:
    """In memory, beside a MemoryStore (tests, throwaway runs)."""

    def __init__(self) -> None:
        self.files: dict[str, MediaFile] = {}
        self.chunks: dict[str, list[bytes]] = {}

    async def put(self, file: MediaFile, data: bytes) -> None:
        self.files[file.id] = file
        self.chunks[file.id] = chunks_of(data)

    async def bind(self, tenant: str, ids: Sequence[str], task_id: str) -> None:
        for media_id in ids:
            file = self.files.get(media_id)
            if file is not None and file.tenant == tenant and not file.task_id:
                self.files[media_id] = dataclasses.replace(file, task_id=task_id)

    async def get(self, tenant: str, media_id: str) -> MediaFile | None:
        file = self.files.get(media_id)
        return file if file is not None and file.tenant == tenant else None

    async def read(self, media_id: str, start: int, end: int) -> AsyncIterator[bytes]:
        for index in range(start // CHUNK, max(end - 1, 0) // CHUNK + 1):
            chunks = self.chunks.get(media_id, [])
            if index >= len(chunks):
                return
            yield cut(chunks[index], index, start, end)

    async def forget_unbound(self, before_ms: int) -> int:
        gone = [key for key, f in self.files.items() if not f.task_id and f.created_ms < before_ms]
        for key in gone:
            del self.files[key]
            self.chunks.pop(key, None)
        return len(gone)

    def forget_tasks(self, task_ids: Collection[str]) -> None:
        """The store deleted these tasks: their files go too."""
        for key in [key for key, f in self.files.items() if f.task_id in task_ids]:
            del self.files[key]
            self.chunks.pop(key, None)


def cut(chunk: bytes, index: int, start: int, end: int) -> bytes:
    """The part of chunk number ``index`` inside ``[start, end)``."""
    offset = index * CHUNK
    return chunk[max(start - offset, 0) : max(end - offset, 0)]


def _schema(integer: str, blob: str, without_rowid: str) -> tuple[str, ...]:
    """Version 1 of the tables, in a backend's words for a big integer and for bytes."""
    return (
        f"""CREATE TABLE media_files (
            id TEXT PRIMARY KEY,
            tenant TEXT NOT NULL,
            task_id TEXT NOT NULL DEFAULT '',
            owner TEXT NOT NULL,
            media_type TEXT NOT NULL,
            filename TEXT NOT NULL,
            size {integer} NOT NULL,
            sha256 TEXT NOT NULL,
            created_ms {integer} NOT NULL
        ){without_rowid}""",
        "CREATE INDEX media_files_task ON media_files (task_id, created_ms)",
        f"""CREATE TABLE media_chunks (
            media_id TEXT NOT NULL,
            n INTEGER NOT NULL,
            task_id TEXT NOT NULL DEFAULT '',
            data {blob} NOT NULL,
            PRIMARY KEY (media_id, n)
        )""",
        "CREATE INDEX media_chunks_task ON media_chunks (task_id)",
    )


# A released migration is never edited: a change is a new entry at the end.
SQLITE: Migrations = [(1, _schema("INTEGER", "BLOB", " WITHOUT ROWID"))]
POSTGRESQL: Migrations = [(1, _schema("BIGINT", "BYTEA", ""))]

MEDIA_TABLES: StoreExtension[MemoryMedia] = StoreExtension(
    name="media",
    memory=MemoryMedia,
    sqlite=SQLITE,
    postgresql=POSTGRESQL,
    task_rows=(TaskRows("media_files"), TaskRows("media_chunks")),
)
