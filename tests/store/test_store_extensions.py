"""The store-extension seam (accord.store._extensions) with a tiny feature of the test's own, on
memory, SQLite and PostgreSQL: its table made by its migrations, once and in order, recorded
by the store; its rows reached through the access the store hands back; its rows of a task
gone with the task, even in a process that did not register it."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

import asyncpg
import pytest

from accord.store import (
    MemoryStore,
    SqliteStore,
    StoreError,
    StoreExtension,
    TaskRows,
    TaskStore,
)
from accord.store._postgres import PostgresStore

from .records import new_task


class Notes:
    """The notes of a memory store: task id -> its notes."""

    def __init__(self) -> None:
        self.rows: dict[str, list[str]] = {}

    def forget_tasks(self, task_ids: Collection[str]) -> None:
        for task_id in task_ids:
            self.rows.pop(task_id, None)


# (The same SQL on both backends here.) Version 2 would fail if it ran twice: it runs once.
_MIGRATIONS = [
    (1, ("CREATE TABLE notes (task_id TEXT NOT NULL, text TEXT NOT NULL)",)),
    (2, ("ALTER TABLE notes ADD COLUMN author TEXT NOT NULL DEFAULT 'nobody'",)),
]
NOTES = StoreExtension(
    name="notes",
    memory=Notes,
    sqlite=_MIGRATIONS,
    postgresql=_MIGRATIONS,
    task_rows=(TaskRows("notes"),),
)
STORE_EXTENSIONS = (NOTES,)  # (the store fixture opens its stores with them)


class NoteBook:
    """A plug-in's storage: notes on tasks, on whichever store it is given."""

    def __init__(self, store: TaskStore) -> None:
        self.access = store.extend(NOTES)

    async def add(self, task_id: str, text: str) -> None:
        access = self.access
        if access.dialect == "sqlite":
            sql = "INSERT INTO notes (task_id, text) VALUES (?, ?)"
            await access.write(lambda conn: conn.execute(sql, (task_id, text)))
        elif access.dialect == "postgresql":
            sql = "INSERT INTO notes (task_id, text) VALUES ($1, $2)"
            await access.pool.execute(sql, task_id, text)
        else:
            access.state.rows.setdefault(task_id, []).append(text)

    async def of(self, task_id: str) -> list[str]:
        access = self.access
        if access.dialect == "sqlite":
            rows = access.read("SELECT text FROM notes WHERE task_id = ? ORDER BY text", (task_id,))
            return [text for (text,) in rows]
        if access.dialect == "postgresql":
            sql = "SELECT text FROM notes WHERE task_id = $1 ORDER BY text"
            return [row[0] for row in await access.pool.fetch(sql, task_id)]
        return sorted(access.state.rows.get(task_id, []))


async def test_a_features_rows_go_with_their_task(store: TaskStore) -> None:
    notes = NoteBook(store)
    for task_id, at, moves in (("old", 1000, ("complete",)), ("ended", 5000, ("fail",)),
                               ("kept", 1000, ("work",))):  # fmt: skip
        await new_task(store, task_id, now_ms=at, moves=moves)
        await notes.add(task_id, f"about {task_id}")
    await notes.add("old", "more")
    assert await notes.of("old") == ["about old", "more"]
    assert await store.delete_terminal_before(3000) == 1  # retention
    assert await notes.of("old") == []
    assert await notes.of("ended") == ["about ended"]
    # A feature's own retention deletes the tasks it names, with every extension's rows.
    assert await notes.access.delete_terminal_tasks("t1", ["ended", "kept"]) == ["ended"]
    assert await notes.of("ended") == []
    assert await notes.of("kept") == ["about kept"]
    assert await store.get_task("kept", "t1") is not None


async def test_an_extension_is_registered_before_the_store_opens(store: TaskStore) -> None:
    NoteBook(store)  # registered already (by the fixture): the same access again
    late = StoreExtension(name="late", memory=Notes)
    with pytest.raises(StoreError, match="before it opens"):
        store.extend(late)
    with pytest.raises(StoreError, match="named 'notes' already"):
        store.extend(StoreExtension(name="notes", memory=Notes))


def test_a_declaration_is_checked() -> None:
    with pytest.raises(ValueError, match="numbered"):
        StoreExtension(name="gaps", memory=Notes, sqlite=[(1, ()), (3, ())])
    with pytest.raises(ValueError, match="letters, digits"):
        StoreExtension(name="no spaces", memory=Notes)
    with pytest.raises(ValueError, match="letters, digits"):
        TaskRows("notes; DROP TABLE tasks")


def _again(store: TaskStore, *extensions: StoreExtension[Notes]) -> TaskStore:
    """A store on the same database as ``store`` (closed), with ``extensions``."""
    if isinstance(store, SqliteStore):
        again: TaskStore = SqliteStore(store.path)
    else:
        assert isinstance(store, PostgresStore)
        again = PostgresStore(store.dsn)
    for extension in extensions:
        again.extend(extension)
    return again


async def _execute(store: TaskStore, sql: str) -> list[tuple[object, ...]]:
    """``sql`` on the database of ``store`` (closed), beside it."""
    if isinstance(store, SqliteStore):
        conn = sqlite3.connect(store.path, isolation_level=None)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()
    assert isinstance(store, PostgresStore)
    pg = await asyncpg.connect(store.dsn)
    try:
        return [tuple(row) for row in await pg.fetch(sql)]
    finally:
        await pg.close()


async def test_migrations_apply_once_in_order_and_the_store_records_them(
    store: TaskStore,
) -> None:
    if isinstance(store, MemoryStore):
        pytest.skip("a memory store has no schema: its extensions' state starts empty")
    await new_task(store, "old", moves=("complete",))
    await NoteBook(store).add("old", "kept across restarts")
    await store.close()
    for _ in range(2):
        again = _again(store, NOTES)
        await again.open()
        assert await NoteBook(again).of("old") == ["kept across restarts"]
        await again.close()
    assert await _execute(store, "SELECT name, version, task_rows FROM store_extensions") == [
        ("notes", 2, "notes.task_id")
    ]
    # A process without the feature still deletes its rows of a task with the task.
    plain = _again(store)
    await plain.open()
    assert await plain.delete_terminal_before(10_000) == 1
    await plain.close()
    assert await _execute(store, "SELECT COUNT(*) FROM notes") == [(0,)]
    # A database holding a newer version of the extension than this code knows is refused.
    await _execute(store, "UPDATE store_extensions SET version = 3")
    with pytest.raises(StoreError, match="store extension 'notes' version 3"):
        await _again(store, NOTES).open()
