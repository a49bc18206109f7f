"""A database as the accord before the store-extension seam left it: the versions of the
store's own migrations that created the contracts' tables and the channel outbox's (SQLite 8
and 9, PostgreSQL 7 and 8), copied as they were released. Frozen on purpose: they are what
databases in the field hold, and must not follow later changes of the features' migrations.
"""

from __future__ import annotations

SQLITE: list[tuple[int, tuple[str, ...]]] = [
    (
        8,
        (
            # (IF NOT EXISTS: a database rolled back to an older version by hand still opens.)
            # Interaction contracts (accord.contracts._tables): one row per contract and
            # tenant, written over its version only (compare-and-swap); due_ms is when the
            # sweeper must look at it next (expiry, a completion window, a notice owed), NULL
            # once there is nothing left to do.
            """CREATE TABLE IF NOT EXISTS contracts (
                tenant TEXT NOT NULL,
                interaction_id TEXT NOT NULL,
                status TEXT NOT NULL,
                version INTEGER NOT NULL,
                created_ms INTEGER NOT NULL,
                due_ms INTEGER,
                document BLOB NOT NULL,
                state BLOB NOT NULL,
                PRIMARY KEY (tenant, interaction_id)
            ) WITHOUT ROWID""",
            "CREATE INDEX IF NOT EXISTS contracts_by_created"
            " ON contracts (tenant, created_ms, interaction_id)",
            "CREATE INDEX IF NOT EXISTS contracts_due ON contracts (due_ms)"
            " WHERE due_ms IS NOT NULL",
            # Each contract's log of moves, one row per version.
            """CREATE TABLE IF NOT EXISTS contract_events (
                tenant TEXT NOT NULL,
                interaction_id TEXT NOT NULL,
                version INTEGER NOT NULL,
                kind TEXT NOT NULL,
                at_ms INTEGER NOT NULL,
                actor TEXT NOT NULL,
                detail BLOB NOT NULL,
                PRIMARY KEY (tenant, interaction_id, version)
            ) WITHOUT ROWID""",
            # The tasks that ran under a contract: cancelled when it ends, deleted after
            # its retentionDays.
            """CREATE TABLE IF NOT EXISTS contract_tasks (
                tenant TEXT NOT NULL,
                interaction_id TEXT NOT NULL,
                task_id TEXT NOT NULL,
                PRIMARY KEY (tenant, interaction_id, task_id)
            ) WITHOUT ROWID""",
        ),
    ),
    (
        9,
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
            # (no message stored before this version is owed to anyone).
            """CREATE TABLE IF NOT EXISTS channel_feed (
                name TEXT PRIMARY KEY,
                position INTEGER NOT NULL
            ) WITHOUT ROWID""",
            "INSERT OR IGNORE INTO channel_feed"
            " SELECT 'deliveries', COALESCE(MAX(pos), 0) FROM feed",
        ),
    ),
]

POSTGRESQL: list[tuple[int, tuple[str, ...]]] = [
    (
        7,
        (
            # Interaction contracts (accord.contracts._tables): one row per contract and
            # tenant, written over its version only (compare-and-swap); due_ms is when the
            # sweeper must look at it next, NULL once there is nothing left to do. (IF NOT
            # EXISTS: a database rolled back to an older version by hand still opens.)
            """CREATE TABLE IF NOT EXISTS contracts (
                tenant TEXT COLLATE "C" NOT NULL,
                interaction_id TEXT COLLATE "C" NOT NULL,
                status TEXT NOT NULL,
                version INTEGER NOT NULL,
                created_ms BIGINT NOT NULL,
                due_ms BIGINT,
                document BYTEA NOT NULL,
                state BYTEA NOT NULL,
                PRIMARY KEY (tenant, interaction_id)
            )""",
            "CREATE INDEX IF NOT EXISTS contracts_by_created"
            " ON contracts (tenant, created_ms, interaction_id)",
            "CREATE INDEX IF NOT EXISTS contracts_due ON contracts (due_ms)"
            " WHERE due_ms IS NOT NULL",
            """CREATE TABLE IF NOT EXISTS contract_events (
                tenant TEXT COLLATE "C" NOT NULL,
                interaction_id TEXT COLLATE "C" NOT NULL,
                version INTEGER NOT NULL,
                kind TEXT NOT NULL,
                at_ms BIGINT NOT NULL,
                actor TEXT NOT NULL,
                detail BYTEA NOT NULL,
                PRIMARY KEY (tenant, interaction_id, version)
            )""",
            """CREATE TABLE IF NOT EXISTS contract_tasks (
                tenant TEXT COLLATE "C" NOT NULL,
                interaction_id TEXT COLLATE "C" NOT NULL,
                task_id TEXT COLLATE "C" NOT NULL,
                PRIMARY KEY (tenant, interaction_id, task_id)
            )""",
        ),
    ),
    (
        8,
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
            # (no message stored before this version is owed to anyone).
            """CREATE TABLE IF NOT EXISTS channel_feed (
                name TEXT COLLATE "C" PRIMARY KEY,
                position BIGINT NOT NULL
            )""",
            "INSERT INTO channel_feed SELECT 'deliveries', COALESCE(MAX(pos), 0) FROM feed"
            " ON CONFLICT DO NOTHING",
        ),
    ),
]
