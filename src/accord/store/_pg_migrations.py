"""The PostgreSQL schema as an ordered list of migrations.

Same rules as the SQLite migrations: ``schema_version`` records what was applied; a released
migration is never edited, a change is a new entry at the end. Every node of a cluster runs
:func:`migrate` when it opens the store; a transaction-scoped advisory lock makes the first
one do the work while the others wait and then find nothing left to do. A feature's own
tables are not here: it declares them as a store extension (:mod:`accord.store._extensions`),
whose migrations run after these, in the same transaction.

Text keys use the "C" collation: ordering by code point matches the engine's (Python's)
ordering of ids, and comparisons are cheaper than a linguistic collation's.

Task counters: totalSize and the tasks-per-tenant limit read ``task_counts``, kept exact by
triggers. A single row per (tenant, state) would be a hot row that serialises every write of
a tenant through its commit, so each backend (connection) keeps its own rows, keyed by its
process id: concurrent transactions never touch the same counter row. Rows of backends that
are gone are folded into shard 0 now and then (:data:`FOLD_DEAD_SHARDS`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import asyncpg

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
            # fillfactor: room on each page for the new version of a row, so an append that
            # changes no indexed column (an artifact, a message) is a HOT update.
            """CREATE TABLE tasks (
                id TEXT COLLATE "C" PRIMARY KEY,
                tenant TEXT COLLATE "C" NOT NULL,
                context_id TEXT COLLATE "C" NOT NULL,
                state SMALLINT NOT NULL,
                created_ms BIGINT NOT NULL,
                updated_ms BIGINT NOT NULL,
                seq INTEGER NOT NULL,
                snapshot BYTEA NOT NULL
            ) WITH (fillfactor = 80)""",
            # ListTasks keyset paging, one index per filter shape; retention walks the
            # (tenant, state) pairs of task_counts into tasks_by_state.
            "CREATE INDEX tasks_by_tenant ON tasks (tenant, updated_ms DESC, id DESC)",
            "CREATE INDEX tasks_by_context ON tasks (tenant, context_id, updated_ms DESC, id DESC)",
            "CREATE INDEX tasks_by_state ON tasks (tenant, state, updated_ms DESC, id DESC)",
            # Recovery scans the unfinished tasks of every tenant by id. A partial index holds
            # only those (SUBMITTED, WORKING, INPUT_REQUIRED, AUTH_REQUIRED), so it stays as
            # small as the work in progress; the planner cannot see through a join with
            # task_counts the way SQLite's does.
            "CREATE INDEX tasks_unfinished ON tasks (id) WHERE state IN (1, 2, 6, 8)",
            """CREATE TABLE events (
                task_id TEXT COLLATE "C" NOT NULL,
                seq INTEGER NOT NULL,
                kind TEXT NOT NULL,
                at_ms BIGINT NOT NULL,
                body BYTEA NOT NULL,
                PRIMARY KEY (task_id, seq)
            )""",
            # ``position`` keeps insertion order: configs are listed oldest first, and
            # replacing a config keeps its place.
            """CREATE TABLE push_configs (
                task_id TEXT COLLATE "C" NOT NULL,
                config_id TEXT COLLATE "C" NOT NULL,
                tenant TEXT COLLATE "C" NOT NULL,
                created_ms BIGINT NOT NULL,
                body BYTEA NOT NULL,
                position BIGINT GENERATED ALWAYS AS IDENTITY,
                -- delivery (the outbox is the task's log plus this cursor; see base.py)
                cursor INTEGER NOT NULL,
                state TEXT NOT NULL,
                failures INTEGER NOT NULL,
                last_error TEXT NOT NULL,
                next_attempt_ms BIGINT NOT NULL,
                PRIMARY KEY (task_id, config_id)
            )""",
            # Claims look for active configs that are due.
            "CREATE INDEX push_due ON push_configs (next_attempt_ms) WHERE state = 'active'",
            """CREATE TABLE task_counts (
                tenant TEXT COLLATE "C" NOT NULL,
                state SMALLINT NOT NULL,
                shard INTEGER NOT NULL,
                n BIGINT NOT NULL,
                PRIMARY KEY (tenant, state, shard)
            )""",
            """CREATE FUNCTION accord_count(t TEXT, s SMALLINT, delta INTEGER) RETURNS void
            LANGUAGE sql AS $$
                INSERT INTO task_counts (tenant, state, shard, n)
                VALUES (t, s, pg_backend_pid(), delta)
                ON CONFLICT (tenant, state, shard) DO UPDATE SET n = task_counts.n + delta
            $$""",
            # Three triggers, so that an append that leaves the state alone (an artifact, a
            # message) runs no counting code at all.
            """CREATE FUNCTION accord_tasks_counted() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP <> 'INSERT' THEN
                    PERFORM accord_count(OLD.tenant, OLD.state, -1);
                END IF;
                IF TG_OP <> 'DELETE' THEN
                    PERFORM accord_count(NEW.tenant, NEW.state, 1);
                END IF;
                RETURN NULL;
            END
            $$""",
            """CREATE TRIGGER tasks_counted_insert AFTER INSERT ON tasks
            FOR EACH ROW EXECUTE FUNCTION accord_tasks_counted()""",
            """CREATE TRIGGER tasks_counted_update AFTER UPDATE OF state, tenant ON tasks
            FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
                               OR OLD.tenant IS DISTINCT FROM NEW.tenant)
            EXECUTE FUNCTION accord_tasks_counted()""",
            """CREATE TRIGGER tasks_counted_delete AFTER DELETE ON tasks
            FOR EACH ROW EXECUTE FUNCTION accord_tasks_counted()""",
            # The global feed (TaskStore.read_feed): one row per append or push-config change,
            # written by triggers in the writing transaction. Position = the writer's
            # transaction id << 16 plus an ordinal: readers return only rows of transactions
            # older than the oldest one still running (see _READ_FEED), so no row with a
            # smaller position can appear after a reader has moved past it.
            "CREATE SEQUENCE feed_ordinal CYCLE MAXVALUE 65535",
            """CREATE TABLE feed (
                pos BIGINT PRIMARY KEY,
                tenant TEXT COLLATE "C" NOT NULL,
                task_id TEXT COLLATE "C" NOT NULL,
                from_seq INTEGER NOT NULL,
                to_seq INTEGER NOT NULL,
                config_id TEXT COLLATE "C",
                deleted BOOLEAN NOT NULL DEFAULT false
            )""",
            "CREATE INDEX feed_by_tenant ON feed (tenant, pos)",
            """CREATE FUNCTION accord_feed_position() RETURNS BIGINT LANGUAGE sql AS $$
                SELECT (pg_current_xact_id()::text::bigint << 16) + nextval('feed_ordinal')
            $$""",
            """CREATE FUNCTION accord_tasks_fed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP = 'INSERT' THEN
                    INSERT INTO feed (pos, tenant, task_id, from_seq, to_seq)
                    VALUES (accord_feed_position(), NEW.tenant, NEW.id, 0, NEW.seq);
                ELSIF NEW.seq > OLD.seq THEN
                    INSERT INTO feed (pos, tenant, task_id, from_seq, to_seq)
                    VALUES (accord_feed_position(), NEW.tenant, NEW.id, OLD.seq, NEW.seq);
                END IF;
                RETURN NULL;
            END
            $$""",
            """CREATE TRIGGER tasks_fed AFTER INSERT OR UPDATE OF seq ON tasks
            FOR EACH ROW EXECUTE FUNCTION accord_tasks_fed()""",
            """CREATE FUNCTION accord_push_configs_fed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP = 'DELETE' THEN
                    INSERT INTO feed (pos, tenant, task_id, from_seq, to_seq, config_id, deleted)
                    VALUES (accord_feed_position(), OLD.tenant, OLD.task_id, 0, 0,
                            OLD.config_id, true);
                ELSE
                    INSERT INTO feed (pos, tenant, task_id, from_seq, to_seq, config_id)
                    VALUES (accord_feed_position(), NEW.tenant, NEW.task_id, 0, 0,
                            NEW.config_id);
                END IF;
                RETURN NULL;
            END
            $$""",
            """CREATE TRIGGER push_configs_fed AFTER INSERT OR UPDATE OF body OR DELETE
            ON push_configs FOR EACH ROW EXECUTE FUNCTION accord_push_configs_fed()""",
        ),
    ),
    (
        2,
        (
            # Remote workers' claims (accord.store._pg_claims), one row per claimed task,
            # shared by every node. ``reaper``: the node failing the task after its lease ran
            # out ('' while the claim is live); ``renewed``: the last grant went to the holder
            # that had the claim already.
            """CREATE TABLE remote_claims (
                task_id TEXT COLLATE "C" PRIMARY KEY,
                tenant TEXT COLLATE "C" NOT NULL,
                holder TEXT NOT NULL,
                expires_ms BIGINT NOT NULL,
                reaper TEXT NOT NULL DEFAULT '',
                renewed BOOLEAN NOT NULL DEFAULT false
            )""",
            # Every node's reaper looks for expired claims a few times per lease.
            "CREATE INDEX remote_claims_expiry ON remote_claims (expires_ms)",
        ),
    ),
    (
        3,
        (
            # Retention deletes a deleted task's feed rows through this.
            "CREATE INDEX feed_by_task ON feed (task_id)",
            # Rows that retention left behind before this version.
            "DELETE FROM feed f WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = f.task_id)",
        ),
    ),
    (
        4,
        (
            # The ListTasks indexes ascending, read backwards for newest first. Declared
            # DESC, every task created or moved went into the first leaf, whose splits are
            # even and left half-empty pages behind: 1.8 times the pages for the same entries
            # (docs/scale-out.md). Ascending, it goes to the last leaf, which splits unevenly
            # and leaves full pages. DROP INDEX locks the table until the migration commits.
            "DROP INDEX tasks_by_tenant",
            "CREATE INDEX tasks_by_tenant ON tasks (tenant, updated_ms, id)",
            "DROP INDEX tasks_by_context",
            "CREATE INDEX tasks_by_context ON tasks (tenant, context_id, updated_ms, id)",
            "DROP INDEX tasks_by_state",
            "CREATE INDEX tasks_by_state ON tasks (tenant, state, updated_ms, id)",
        ),
    ),
    (
        5,
        (
            # Secrets every node shares (TaskStore.shared_secret), e.g. the key that signs
            # ListTasks page tokens: a token one node issued is accepted by every other.
            "CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value BYTEA NOT NULL)",
        ),
    ),
    (
        6,
        (
            # Safe retries (docs/operations.md): requests already carried out, shared by every
            # node, so a retry sent to another node finds the first one. Written in the
            # appending statement; forgotten by age once the retry window has passed.
            """CREATE TABLE IF NOT EXISTS requests (
                tenant TEXT COLLATE "C" NOT NULL,
                caller TEXT COLLATE "C" NOT NULL,
                key TEXT COLLATE "C" NOT NULL,
                created_ms BIGINT NOT NULL,
                fingerprint BYTEA NOT NULL,
                task_id TEXT COLLATE "C" NOT NULL,
                response BYTEA,
                PRIMARY KEY (tenant, caller, key)
            )""",
            "CREATE INDEX IF NOT EXISTS requests_by_age ON requests (created_ms)",
        ),
    ),
    # Versions 7 and 8 created two features' tables. The features declare them now, as store
    # extensions (accord.store._extensions), with the same statements as their first
    # migration, which finds them in place in a database made before.
    (7, ()),
    (8, ()),
    (
        9,
        (
            # The store extensions a database holds (accord.store._extensions): each one's
            # version, and its tables whose rows go with their task ("table.column,…").
            """CREATE TABLE IF NOT EXISTS store_extensions (
                name TEXT COLLATE "C" PRIMARY KEY,
                version INTEGER NOT NULL,
                task_rows TEXT NOT NULL,
                applied_ms BIGINT NOT NULL
            )""",
        ),
    ),
]

LATEST = MIGRATIONS[-1][0]

# Any constant: serialises migrations of every node opening the same database.
_MIGRATION_LOCK = 0x61636F7264  # "accord"

# Counter rows of backends that no longer exist move into shard 0 (never a process id).
# Concurrent folds are safe: a row deleted by one is skipped by the other.
FOLD_DEAD_SHARDS = """
WITH dead AS (
    DELETE FROM task_counts c
    WHERE c.shard <> 0
      AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.shard)
    RETURNING tenant, state, n
)
INSERT INTO task_counts (tenant, state, shard, n)
SELECT tenant, state, 0, SUM(n) FROM dead GROUP BY tenant, state
ON CONFLICT (tenant, state, shard) DO UPDATE SET n = task_counts.n + excluded.n
"""


# Feed rows of transactions older than every transaction still running anywhere on the
# server: they are all committed (or rolled back), and any later row has a larger position.
# A transaction left open on the server holds the feed back until it ends.
_READ_FEED = """
SELECT f.pos, f.tenant, f.task_id, f.from_seq, f.to_seq, f.config_id, f.deleted,
       p.tenant, p.created_ms, p.body
FROM feed f
LEFT JOIN push_configs p
    ON NOT f.deleted AND p.task_id = f.task_id AND p.config_id = f.config_id
WHERE f.pos > $1
  AND f.pos < (pg_snapshot_xmin(pg_current_snapshot())::text::bigint << 16)
  {tenant}
ORDER BY f.pos
LIMIT $2
"""
READ_FEED_ALL = _READ_FEED.format(tenant="")
READ_FEED_OF_TENANT = _READ_FEED.format(tenant="AND f.tenant = $3")


async def current_version(conn: asyncpg.Connection) -> int:
    value = await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_version")
    return int(value)


async def migrate(
    conn: asyncpg.Connection, now_ms: int, extensions: Iterable[StoreExtension[Any]] = ()
) -> int:
    """Bring the schema to :data:`LATEST`, then each of ``extensions`` to its latest version,
    in one transaction; returns the schema version found."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, applied_ms BIGINT NOT NULL)"
        )
        found = await current_version(conn)
        for version, statements in missing_migrations(MIGRATIONS, found, "schema"):
            for statement in statements:
                await conn.execute(statement)
            await conn.execute("INSERT INTO schema_version VALUES ($1, $2)", version, now_ms)
        for extension in extensions:
            await _migrate_extension(conn, extension, now_ms)
    return found


async def _migrate_extension(
    conn: asyncpg.Connection, extension: StoreExtension[Any], now_ms: int
) -> None:
    held = await conn.fetchrow(
        "SELECT version, task_rows FROM store_extensions WHERE name = $1", extension.name
    )
    found, rows = (int(held[0]), str(held[1])) if held is not None else (0, None)
    todo = missing_migrations(extension.postgresql, found, f"store extension {extension.name!r}")
    for _, statements in todo:
        for statement in statements:
            await conn.execute(statement)
    version = todo[-1][0] if todo else found
    task_rows = encode_task_rows(extension.task_rows)
    if (version, task_rows) != (found, rows):
        await conn.execute(
            "INSERT INTO store_extensions VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO UPDATE"
            " SET version = excluded.version, task_rows = excluded.task_rows,"
            " applied_ms = excluded.applied_ms",
            extension.name,
            version,
            task_rows,
            now_ms,
        )


async def extension_task_rows(conn: asyncpg.Connection) -> list[TaskRows]:
    """The tables of every extension the database holds whose rows go with their task,
    registered in this process or not."""
    rows = await conn.fetch("SELECT task_rows FROM store_extensions ORDER BY name")
    return [found for row in rows for found in decode_task_rows(row[0])]
