"""A database the accord before the store-extension seam left behind — the contracts' and the
channel outbox's tables made by the store's own migrations, rows in them — opens with this
code in place: a store without those features leaves their tables alone, and once the
features are registered they read every row as it was, their versions are recorded, and the
outbox's rows still go with their task."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
from tests.contracts.contract_helpers import new_key, proposal

from accord.contracts import _lifecycle as lifecycle
from accord.contracts._tables import ContractStore, contract_store, event_row, record_row
from accord.harness.channels._outbox_store import ChannelOutbox, channel_outbox
from accord.store import SqliteStore, TaskStore
from accord.store import _migrations as migrations
from accord.store import _pg_migrations as pg_migrations
from accord.store._postgres import PostgresStore
from accord.wire._model import TaskState

from . import schema_before_extensions as before
from .records import new_task

RECORD, EVENT = lifecycle.propose(
    proposal(new_key()), tenant="t1", local_agent="agent:b", now_ms=time.time_ns() // 1_000_000
)
CONTRACT_COLUMNS = "tenant, interaction_id, status, version, created_ms, due_ms, document, state"
EVENT_COLUMNS = "tenant, interaction_id, version, kind, at_ms, actor, detail"
OWED = [("done", "helper", 2, "t1"), ("working", "helper", 2, "t1")]


async def _tasks(store: TaskStore) -> None:
    """The tasks of the old database (written with this code's store: the same rows)."""
    await store.open()
    await new_task(store, "done", moves=("complete",))
    await new_task(store, "working", moves=("work",))
    await store.close()


async def _opens_in_place(new_store: Callable[[], TaskStore], position: int) -> None:
    """The old database opened by a store without the features (an echo agent on a harness's
    file: their rows stay), then by one with them (they find every row as it was)."""
    plain = new_store()
    await plain.open()
    await plain.close()
    store = new_store()
    contracts, outbox = contract_store(store), channel_outbox(store)
    await store.open()
    try:
        assert await outbox.position() == position > 0
        await _intact(store, contracts, outbox)
    finally:
        await store.close()


async def _intact(store: TaskStore, contracts: ContractStore, outbox: ChannelOutbox) -> None:
    done = await store.get_task("done", "t1")
    assert done is not None and done.state == TaskState.COMPLETED
    assert await contracts.get("t1", RECORD.interaction_id) == RECORD
    assert [e.kind for e in await contracts.events("t1", RECORD.interaction_id)] == ["proposed"]
    assert await contracts.bound_tasks("t1", RECORD.interaction_id) == ["done"]
    assert [(d.task_id, d.recipient, d.seq) for d in await outbox.deliveries("done")] == [
        ("done", "helper", 2)
    ]
    # The outbox's rows still go with their task.
    assert await store.delete_terminal_before(2**62) == 1
    assert await outbox.deliveries("done") == []
    assert len(await outbox.deliveries("working")) == 1


async def test_a_sqlite_database_from_before_the_seam_opens_in_place(tmp_path: Path) -> None:
    path = str(tmp_path / "t.db")
    await _tasks(SqliteStore(path))
    # Back to the layout of then: the store's versions 8 and 9 made the features' tables.
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TABLE store_extensions")
    conn.execute("DELETE FROM schema_version WHERE version >= 8")
    for version, statements in before.SQLITE:
        for statement in statements:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version VALUES (?, 0)", (version,))
    conn.execute(f"INSERT INTO contracts ({CONTRACT_COLUMNS}) VALUES ({', '.join('?' * 8)})",
                 record_row(RECORD, None))  # fmt: skip
    conn.execute(f"INSERT INTO contract_events ({EVENT_COLUMNS}) VALUES ({', '.join('?' * 7)})",
                 event_row(RECORD, EVENT))  # fmt: skip
    conn.execute("INSERT INTO contract_tasks VALUES ('t1', ?, 'done')", (RECORD.interaction_id,))
    conn.executemany(
        "INSERT INTO channel_deliveries (task_id, recipient, seq, tenant) VALUES (?, ?, ?, ?)",
        OWED,
    )
    [(position,)] = conn.execute("SELECT position FROM channel_feed").fetchall()
    conn.close()

    await _opens_in_place(lambda: SqliteStore(path), position)
    conn = sqlite3.connect(path)
    versions = conn.execute("SELECT name, version FROM store_extensions ORDER BY name").fetchall()
    [(schema,)] = conn.execute("SELECT max(version) FROM schema_version").fetchall()
    conn.close()
    assert versions == [("channels", 1), ("contracts", 1)]
    assert schema == migrations.LATEST


async def test_a_postgresql_database_from_before_the_seam_opens_in_place(pg_url: str) -> None:
    await _tasks(PostgresStore(pg_url))
    # Back to the layout of then: the store's versions 7 and 8 made the features' tables.
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute("DROP TABLE store_extensions")
        await conn.execute("DELETE FROM schema_version WHERE version >= 7")
        for version, statements in before.POSTGRESQL:
            for statement in statements:
                await conn.execute(statement)
            await conn.execute("INSERT INTO schema_version VALUES ($1, 0)", version)
        await conn.execute(
            f"INSERT INTO contracts ({CONTRACT_COLUMNS}) VALUES ({_marks(8)})",
            *record_row(RECORD, None),
        )
        await conn.execute(
            f"INSERT INTO contract_events ({EVENT_COLUMNS}) VALUES ({_marks(7)})",
            *event_row(RECORD, EVENT),
        )
        await conn.execute(
            "INSERT INTO contract_tasks VALUES ('t1', $1, 'done')", RECORD.interaction_id
        )
        await conn.executemany(
            "INSERT INTO channel_deliveries (task_id, recipient, seq, tenant)"
            " VALUES ($1, $2, $3, $4)",
            OWED,
        )
        position = await conn.fetchval("SELECT position FROM channel_feed")
    finally:
        await conn.close()

    await _opens_in_place(lambda: PostgresStore(pg_url), position)
    conn = await asyncpg.connect(pg_url)
    try:
        rows: list[Any] = await conn.fetch(
            "SELECT name, version FROM store_extensions ORDER BY name"
        )
        assert [tuple(row) for row in rows] == [("channels", 1), ("contracts", 1)]
        assert await conn.fetchval("SELECT max(version) FROM schema_version") == (
            pg_migrations.LATEST
        )
    finally:
        await conn.close()


def _marks(count: int) -> str:
    return ", ".join(f"${n}" for n in range(1, count + 1))
