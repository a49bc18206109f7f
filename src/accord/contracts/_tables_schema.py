"""The contracts' tables in the task store's database, as migrations of the ``contracts``
store extension (accord.store._extensions; declared in :mod:`accord.contracts._tables`).

A released migration is never edited: a change is a new entry at the end. Version 1 is what
the store's own migrations created before the tables moved here (SQLite: its version 8;
PostgreSQL: its version 7), statement for statement, so on a database made then it finds the
tables in place and changes nothing (``IF NOT EXISTS``).
"""

from __future__ import annotations

from accord.store import Migrations

SQLITE: Migrations = [
    (
        1,
        (
            # (IF NOT EXISTS: a database made before the tables moved here already has them.)
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
]

POSTGRESQL: Migrations = [
    (
        1,
        (
            # Interaction contracts (accord.contracts._tables): one row per contract and
            # tenant, written over its version only (compare-and-swap); due_ms is when the
            # sweeper must look at it next, NULL once there is nothing left to do. (IF NOT
            # EXISTS: a database made before the tables moved here already has them.)
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
]
