"""Contracts in the SQLite file of a SqliteStore, through its extension access: writes on
its writer thread (so they take turns with task writes and commit in its groups), reads on
its read connection."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from accord.contracts._record import ContractRecord, Event
from accord.contracts._tables import (
    ContractConflict,
    document_json,
    event_from,
    event_row,
    record_from,
    record_row,
    state_json,
)
from accord.store import SqliteAccess

_COLUMNS = "tenant, version, document, state"


def _insert_event(conn: sqlite3.Connection, record: ContractRecord, event: Event) -> None:
    conn.execute(
        "INSERT INTO contract_events (tenant, interaction_id, version, kind, at_ms, actor,"
        " detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
        event_row(record, event),
    )


class SqliteContracts:
    def __init__(self, access: SqliteAccess) -> None:
        self._access = access

    async def create(self, record: ContractRecord, event: Event, due_ms: int | None) -> None:
        params = record_row(record, due_ms)

        def op(conn: sqlite3.Connection) -> None:
            found = conn.execute(
                "SELECT version FROM contracts WHERE tenant = ? AND interaction_id = ?",
                params[:2],
            ).fetchall()
            if found:
                raise ContractConflict(record.interaction_id, 0, int(found[0][0]))
            conn.execute(
                "INSERT INTO contracts (tenant, interaction_id, status, version, created_ms,"
                " due_ms, document, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                params,
            )
            _insert_event(conn, record, event)

        await self._access.write(op)

    async def replace(
        self, record: ContractRecord, expected: int, event: Event, due_ms: int | None
    ) -> None:
        def op(conn: sqlite3.Connection) -> None:
            # The writer is serial: nothing changes the row between this check and the write.
            cursor = conn.execute(
                "UPDATE contracts SET status = ?, version = ?, due_ms = ?, document = ?,"
                " state = ? WHERE tenant = ? AND interaction_id = ? AND version = ?",
                (
                    record.status,
                    record.version,
                    due_ms,
                    document_json(record),
                    state_json(record),
                    record.tenant,
                    record.interaction_id,
                    expected,
                ),
            )
            if cursor.rowcount != 1:
                found = conn.execute(
                    "SELECT version FROM contracts WHERE tenant = ? AND interaction_id = ?",
                    (record.tenant, record.interaction_id),
                ).fetchall()
                actual = int(found[0][0]) if found else 0
                raise ContractConflict(record.interaction_id, expected, actual)
            _insert_event(conn, record, event)

        await self._access.write(op)

    async def get(self, tenant: str, interaction_id: str) -> ContractRecord | None:
        rows = self._access.read(
            f"SELECT {_COLUMNS} FROM contracts WHERE tenant = ? AND interaction_id = ?",
            (tenant, interaction_id),
        )
        return record_from(*rows[0]) if rows else None

    async def list_contracts(
        self, tenant: str, status: str | None, limit: int, after: str
    ) -> list[ContractRecord]:
        where = ["tenant = ?"]
        params: list[Any] = [tenant]
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if after:
            where.append(
                "(created_ms, interaction_id) < (SELECT created_ms, interaction_id FROM"
                " contracts WHERE tenant = ? AND interaction_id = ?)"
            )
            params += [tenant, after]
        rows = self._access.read(
            f"SELECT {_COLUMNS} FROM contracts WHERE {' AND '.join(where)}"
            " ORDER BY created_ms DESC, interaction_id DESC LIMIT ?",
            (*params, max(limit, 0)),
        )
        return [record_from(*row) for row in rows]

    async def events(self, tenant: str, interaction_id: str) -> list[Event]:
        rows = self._access.read(
            "SELECT version, kind, at_ms, actor, detail FROM contract_events"
            " WHERE tenant = ? AND interaction_id = ? ORDER BY version",
            (tenant, interaction_id),
        )
        return [event_from(row) for row in rows]

    async def due(self, now_ms: int, limit: int) -> list[ContractRecord]:
        rows = self._access.read(
            f"SELECT {_COLUMNS} FROM contracts WHERE due_ms <= ? ORDER BY due_ms LIMIT ?",
            (now_ms, max(limit, 0)),
        )
        return [record_from(*row) for row in rows]

    async def bind_task(self, tenant: str, interaction_id: str, task_id: str) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO contract_tasks VALUES (?, ?, ?)",
                (tenant, interaction_id, task_id),
            )

        await self._access.write(op)

    async def bound_tasks(self, tenant: str, interaction_id: str) -> list[str]:
        rows = self._access.read(
            "SELECT task_id FROM contract_tasks WHERE tenant = ? AND interaction_id = ?"
            " ORDER BY task_id",
            (tenant, interaction_id),
        )
        return [str(row[0]) for row in rows]

    async def bindings(self, limit: int, after: tuple[str, str, str]) -> list[tuple[str, str, str]]:
        rows = self._access.read(
            "SELECT tenant, interaction_id, task_id FROM contract_tasks"
            " WHERE (tenant, interaction_id, task_id) > (?, ?, ?)"
            " ORDER BY tenant, interaction_id, task_id LIMIT ?",
            (*after, max(limit, 0)),
        )
        return [(str(a), str(b), str(c)) for a, b, c in rows]

    async def unbind(self, tenant: str, interaction_id: str, task_ids: Sequence[str]) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "DELETE FROM contract_tasks WHERE tenant = ? AND interaction_id = ?"
                " AND task_id = ?",
                [(tenant, interaction_id, task_id) for task_id in task_ids],
            )

        await self._access.write(op)

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        return await self._access.delete_terminal_tasks(tenant, task_ids)
