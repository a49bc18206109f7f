"""The SQLite schema as an ordered list of migrations.

A database records the versions applied to it in ``schema_version``; :func:`migrate` applies
the missing ones, in order, in one transaction, when a store opens. A migration, once
released, is never edited: a schema change is a new entry at the end of :data:`MIGRATIONS`.
A feature's own tables are not here: it declares them as a store extension
(:mod:`accord.store._extensions`), whose migrations run after these, in the same transaction.

Task states are stored as their proto enum numbers (small integers keep the indexes small).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from accord.store._extensions import (
    StoreExtension,
    TaskRows,
    decode_task_rows,
    encode_task_rows,
    missing_migrations,
)

# (version, statements). Versions are 1, 2, 3 … with no gaps.
MIGRATIONS: list[tuple[int, tuple[str, ...]]] = [
    (
        1,
        (
            """CREATE TABLE tasks (
                id TEXT PRIMARY KEY,
                tenant TEXT NOT NULL,
                context_id TEXT NOT NULL,
                state INTEGER NOT NULL,
                created_ms INTEGER NOT NULL,
                updated_ms INTEGER NOT NULL,
                seq INTEGER NOT NULL,
                snapshot BLOB NOT NULL
            )""",
            # ListTasks keyset paging, one index per filter shape.
            "CREATE INDEX tasks_by_tenant ON tasks (tenant, updated_ms DESC, id DESC)",
            "CREATE INDEX tasks_by_context ON tasks (tenant, context_id, updated_ms DESC, id DESC)",
            "CREATE INDEX tasks_by_state ON tasks (tenant, state, updated_ms DESC, id DESC)",
            # No index of its own for recovery or retention: they walk the (tenant, state)
            # pairs of task_counts into tasks_by_state, so every write maintains one fewer.
            """CREATE TABLE events (
                task_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                kind TEXT NOT NULL,
                at_ms INTEGER NOT NULL,
                body BLOB NOT NULL,
                PRIMARY KEY (task_id, seq)
            ) WITHOUT ROWID""",
            # rowid keeps insertion order: a task's configs are listed oldest first, and
            # replacing a config keeps its place.
            """CREATE TABLE push_configs (
                task_id TEXT NOT NULL,
                config_id TEXT NOT NULL,
                tenant TEXT NOT NULL,
                created_ms INTEGER NOT NULL,
                body BLOB NOT NULL,
                UNIQUE (task_id, config_id)
            )""",
            # Tasks per (tenant, state), kept in the writing transaction: totalSize without
            # filters or with only a status filter, and count_tasks, read at most nine rows.
            """CREATE TABLE task_counts (
                tenant TEXT NOT NULL,
                state INTEGER NOT NULL,
                n INTEGER NOT NULL,
                PRIMARY KEY (tenant, state)
            ) WITHOUT ROWID""",
            # Triggers keep the counters exact whatever statement changes ``tasks``.
            """CREATE TRIGGER tasks_counted_insert AFTER INSERT ON tasks BEGIN
                INSERT INTO task_counts VALUES (new.tenant, new.state, 1)
                    ON CONFLICT (tenant, state) DO UPDATE SET n = n + 1;
            END""",
            """CREATE TRIGGER tasks_counted_update AFTER UPDATE OF state, tenant ON tasks
            WHEN old.state IS NOT new.state OR old.tenant IS NOT new.tenant BEGIN
                UPDATE task_counts SET n = n - 1 WHERE tenant = old.tenant AND state = old.state;
                INSERT INTO task_counts VALUES (new.tenant, new.state, 1)
                    ON CONFLICT (tenant, state) DO UPDATE SET n = n + 1;
            END""",
            """CREATE TRIGGER tasks_counted_delete AFTER DELETE ON tasks BEGIN
                UPDATE task_counts SET n = n - 1 WHERE tenant = old.tenant AND state = old.state;
            END""",
        ),
    ),
    (
        2,
        (
            # Push delivery: each config's cursor in its task's log and a small state, in the
            # config's row, so deleting a config or its task drops them too.
            "ALTER TABLE push_configs ADD COLUMN delivered_seq INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE push_configs ADD COLUMN delivery_state TEXT NOT NULL DEFAULT 'active'",
            "ALTER TABLE push_configs ADD COLUMN failures INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE push_configs ADD COLUMN last_error TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE push_configs ADD COLUMN next_attempt_ms INTEGER NOT NULL DEFAULT 0",
            # Configs stored before delivery existed start at their task's end: no replay.
            "UPDATE push_configs SET delivered_seq ="
            " COALESCE((SELECT seq FROM tasks WHERE tasks.id = push_configs.task_id), 0)",
            # The due scan reads active configs whose retry time has come.
            "CREATE INDEX push_due ON push_configs (delivery_state, next_attempt_ms)",
        ),
    ),
    (
        3,
        (
            # The global feed: one row per committed append or push-config change, in commit
            # order (the writer is serial), written by triggers inside the writing transaction.
            # AUTOINCREMENT: a position is never reused, even after the newest row is deleted.
            # IF NOT EXISTS: a database rolled back to an older version by hand still opens.
            """CREATE TABLE IF NOT EXISTS feed (
                pos INTEGER PRIMARY KEY AUTOINCREMENT,
                tenant TEXT NOT NULL,
                task_id TEXT NOT NULL,
                from_seq INTEGER NOT NULL,
                to_seq INTEGER NOT NULL,
                config_id TEXT,
                deleted INTEGER NOT NULL DEFAULT 0
            )""",
            """CREATE TRIGGER IF NOT EXISTS tasks_feed_insert AFTER INSERT ON tasks BEGIN
                INSERT INTO feed (tenant, task_id, from_seq, to_seq)
                    VALUES (new.tenant, new.id, 0, new.seq);
            END""",
            """CREATE TRIGGER IF NOT EXISTS tasks_feed_update AFTER UPDATE OF seq ON tasks
            WHEN new.seq > old.seq BEGIN
                INSERT INTO feed (tenant, task_id, from_seq, to_seq)
                    VALUES (new.tenant, new.id, old.seq, new.seq);
            END""",
            """CREATE TRIGGER IF NOT EXISTS push_configs_feed_insert
            AFTER INSERT ON push_configs BEGIN
                INSERT INTO feed (tenant, task_id, from_seq, to_seq, config_id)
                    VALUES (new.tenant, new.task_id, 0, 0, new.config_id);
            END""",
            """CREATE TRIGGER IF NOT EXISTS push_configs_feed_update
            AFTER UPDATE OF body ON push_configs BEGIN
                INSERT INTO feed (tenant, task_id, from_seq, to_seq, config_id)
                    VALUES (new.tenant, new.task_id, 0, 0, new.config_id);
            END""",
            """CREATE TRIGGER IF NOT EXISTS push_configs_feed_delete
            AFTER DELETE ON push_configs BEGIN
                INSERT INTO feed (tenant, task_id, from_seq, to_seq, config_id, deleted)
                    VALUES (old.tenant, old.task_id, 0, 0, old.config_id, 1);
            END""",
        ),
    ),
    (
        4,
        (
            # Retention deletes a deleted task's feed rows through this (one more index
            # entry per append; without it each sweep would scan the whole feed).
            "CREATE INDEX IF NOT EXISTS feed_by_task ON feed (task_id)",
            # Rows that retention left behind before this version.
            "DELETE FROM feed WHERE task_id NOT IN (SELECT id FROM tasks)",
        ),
    ),
    (
        5,
        (
            # The ListTasks indexes in ascending order; SQLite reads them backwards for the
            # newest first, with the same plans. Their newest entries (a task created or
            # moved now) then land at the end of the index, where SQLite leaves full pages
            # behind, instead of at the front, where a full page is split in half and the
            # half left behind is never filled again (twice the splits, half-empty pages):
            # 54 instead of 61 pwrite calls (two per page) for a commit of six echo tasks.
            "DROP INDEX IF EXISTS tasks_by_tenant",
            "DROP INDEX IF EXISTS tasks_by_context",
            "DROP INDEX IF EXISTS tasks_by_state",
            "CREATE INDEX tasks_by_tenant ON tasks (tenant, updated_ms, id)",
            "CREATE INDEX tasks_by_context ON tasks (tenant, context_id, updated_ms, id)",
            "CREATE INDEX tasks_by_state ON tasks (tenant, state, updated_ms, id)",
        ),
    ),
    (
        6,
        (
            # Secrets every process opening the file shares (TaskStore.shared_secret), e.g.
            # the key that signs ListTasks page tokens.
            """CREATE TABLE IF NOT EXISTS secrets (
                name TEXT PRIMARY KEY,
                value BLOB NOT NULL
            ) WITHOUT ROWID""",
        ),
    ),
    (
        7,
        (
            # Safe retries (docs/operations.md): requests already carried out, by who sent
            # them and their key (m:<messageId>, k:<Idempotency-Key>), with the task they
            # created or continued ('' for none) and, when the answer is not that task's
            # state, the answer itself. Written in the appending transaction; forgotten by
            # age (requests_by_age) once the retry window has passed.
            """CREATE TABLE IF NOT EXISTS requests (
                tenant TEXT NOT NULL,
                caller TEXT NOT NULL,
                key TEXT NOT NULL,
                created_ms INTEGER NOT NULL,
                fingerprint BLOB NOT NULL,
                task_id TEXT NOT NULL,
                response BLOB,
                PRIMARY KEY (tenant, caller, key)
            ) WITHOUT ROWID""",
            "CREATE INDEX IF NOT EXISTS requests_by_age ON requests (created_ms)",
        ),
    ),
    # Versions 8 and 9 created two features' tables. The features declare them now, as store
    # extensions (accord.store._extensions), with the same statements as their first
    # migration, which finds them in place in a database made before.
    (8, ()),
    (9, ()),
    (
        10,
        (
            # The store extensions a database holds (accord.store._extensions): each one's
            # version, and its tables whose rows go with their task ("table.column,…").
            """CREATE TABLE IF NOT EXISTS store_extensions (
                name TEXT PRIMARY KEY,
                version INTEGER NOT NULL,
                task_rows TEXT NOT NULL,
                applied_ms INTEGER NOT NULL
            ) WITHOUT ROWID""",
        ),
    ),
]

LATEST = MIGRATIONS[-1][0]


def current_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
    return int(row[0])


def migrate(
    conn: sqlite3.Connection, now_ms: int, extensions: Iterable[StoreExtension[Any]] = ()
) -> int:
    """Bring the schema to :data:`LATEST`, then each of ``extensions`` to its latest version;
    returns the schema version found before.

    ``conn`` must be in autocommit mode (``isolation_level=None``); the whole upgrade is one
    ``BEGIN IMMEDIATE`` transaction, so two processes opening the same file do not race.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, applied_ms INTEGER NOT NULL)"
        )
        found = current_version(conn)
        for version, statements in missing_migrations(MIGRATIONS, found, "schema"):
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version VALUES (?, ?)", (version, now_ms))
        for extension in extensions:
            _migrate_extension(conn, extension, now_ms)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found


def _migrate_extension(
    conn: sqlite3.Connection, extension: StoreExtension[Any], now_ms: int
) -> None:
    held = conn.execute(
        "SELECT version, task_rows FROM store_extensions WHERE name = ?", (extension.name,)
    ).fetchall()
    found, rows = (int(held[0][0]), str(held[0][1])) if held else (0, None)
    todo = missing_migrations(extension.sqlite, found, f"store extension {extension.name!r}")
    for _, statements in todo:
        for statement in statements:
            conn.execute(statement)
    version = todo[-1][0] if todo else found
    task_rows = encode_task_rows(extension.task_rows)
    if (version, task_rows) != (found, rows):
        conn.execute(
            "INSERT INTO store_extensions VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE"
            " SET version = excluded.version, task_rows = excluded.task_rows,"
            " applied_ms = excluded.applied_ms",
            (extension.name, version, task_rows, now_ms),
        )


def extension_task_rows(conn: sqlite3.Connection) -> list[TaskRows]:
    """The tables of every extension the database holds whose rows go with their task,
    registered in this process or not."""
    rows = conn.execute("SELECT task_rows FROM store_extensions ORDER BY name").fetchall()
    return [found for (text,) in rows for found in decode_task_rows(text)]
