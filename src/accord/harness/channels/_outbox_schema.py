"""The channel outbox's tables in the task store's database, as migrations of the
``channels`` store extension (accord.store._extensions; declared in
:mod:`accord.harness.channels._outbox_store`).

A released migration is never edited: a change is a new entry at the end. Version 1 is what
the store's own migrations created before the tables moved here (SQLite: its version 9;
PostgreSQL: its version 8), statement for statement, so on a database made then it finds the
tables in place and changes nothing (``IF NOT EXISTS``; the outbox's feed position stays).
"""

from __future__ import annotations

from accord.store import Migrations

SQLITE: Migrations = [
    (
        1,
        (
            # The channel outbox (accord.harness.channels._outbox_store): channel messages owed to
            # the harness's agent participants, one row per (task, recipient, message event),
            # in message order per (task, recipient); next_attempt_ms is a lease, a retry time,
            # or when it was delivered.
            """CREATE TABLE IF NOT EXISTS channel_deliveries (
                task_id TEXT NOT NULL,
                recipient TEXT NOT NULL,
                seq INTEGER NOT NULL,
                tenant TEXT NOT NULL,
                state TEXT NOT NULL DEFAULT 'pending',
                failures INTEGER NOT NULL DEFAULT 0,
                last_error TEXT NOT NULL DEFAULT '',
                next_attempt_ms INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (task_id, recipient, seq)
            ) WITHOUT ROWID""",
            "CREATE INDEX IF NOT EXISTS channel_deliveries_due"
            " ON channel_deliveries (state, next_attempt_ms)",
            # How far the outbox's follower has read the feed; it starts at the feed's end
            # (no message stored before this migration is owed to anyone).
            """CREATE TABLE IF NOT EXISTS channel_feed (
                name TEXT PRIMARY KEY,
                position INTEGER NOT NULL
            ) WITHOUT ROWID""",
            "INSERT OR IGNORE INTO channel_feed"
            " SELECT 'deliveries', COALESCE(MAX(pos), 0) FROM feed",
        ),
    ),
]

POSTGRESQL: Migrations = [
    (
        1,
        (
            # The channel outbox (accord.harness.channels._outbox_store): channel messages owed to
            # the harness's agent participants, one row per (task, recipient, message event),
            # in message order per (task, recipient); next_attempt_ms is a lease, a retry time,
            # or when it was delivered.
            """CREATE TABLE IF NOT EXISTS channel_deliveries (
                task_id TEXT COLLATE "C" NOT NULL,
                recipient TEXT COLLATE "C" NOT NULL,
                seq INTEGER NOT NULL,
                tenant TEXT COLLATE "C" NOT NULL,
                state TEXT NOT NULL DEFAULT 'pending',
                failures INTEGER NOT NULL DEFAULT 0,
                last_error TEXT NOT NULL DEFAULT '',
                next_attempt_ms BIGINT NOT NULL DEFAULT 0,
                PRIMARY KEY (task_id, recipient, seq)
            )""",
            "CREATE INDEX IF NOT EXISTS channel_deliveries_due"
            " ON channel_deliveries (state, next_attempt_ms)",
            # How far the outbox's follower has read the feed; it starts at the feed's end
            # (no message stored before this migration is owed to anyone).
            """CREATE TABLE IF NOT EXISTS channel_feed (
                name TEXT COLLATE "C" PRIMARY KEY,
                position BIGINT NOT NULL
            )""",
            "INSERT INTO channel_feed SELECT 'deliveries', COALESCE(MAX(pos), 0) FROM feed"
            " ON CONFLICT DO NOTHING",
        ),
    ),
]
