"""Contracts in the PostgreSQL database of a PostgresStore (on its pool, through its extension
access), shared by every node: a record is written with ``WHERE version = expected``, so of
two nodes (or two requests) moving the same contract, exactly one wins."""

from __future__ import annotations

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
from accord.store import PostgresAccess

_COLUMNS = "tenant, version, document, state"
_INSERT_EVENT = (
    "INSERT INTO contract_events (tenant, interaction_id, version, kind, at_ms, actor, detail)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7)"
)


async def _version(conn: Any, record: ContractRecord) -> int:
    found = await conn.fetchval(
        "SELECT version FROM contracts WHERE tenant = $1 AND interaction_id = $2",
        record.tenant,
        record.interaction_id,
    )
    return int(found or 0)


class PgContracts:
    def __init__(self, access: PostgresAccess) -> None:
        self._access = access

    async def create(self, record: ContractRecord, event: Event, due_ms: int | None) -> None:
        async with self._access.pool.acquire() as conn, conn.transaction():
            status = await conn.execute(
                "INSERT INTO contracts (tenant, interaction_id, status, version, created_ms,"
                " due_ms, document, state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
                " ON CONFLICT (tenant, interaction_id) DO NOTHING",
                *record_row(record, due_ms),
            )
            if status != "INSERT 0 1":
                raise ContractConflict(record.interaction_id, 0, await _version(conn, record))
            await conn.execute(_INSERT_EVENT, *event_row(record, event))

    async def replace(
        self, record: ContractRecord, expected: int, event: Event, due_ms: int | None
    ) -> None:
        async with self._access.pool.acquire() as conn, conn.transaction():
            status = await conn.execute(
                "UPDATE contracts SET status = $1, version = $2, due_ms = $3, document = $4,"
                " state = $5 WHERE tenant = $6 AND interaction_id = $7 AND version = $8",
                record.status,
                record.version,
                due_ms,
                document_json(record),
                state_json(record),
                record.tenant,
                record.interaction_id,
                expected,
            )
            if status != "UPDATE 1":
                actual = await _version(conn, record)
                raise ContractConflict(record.interaction_id, expected, actual)
            await conn.execute(_INSERT_EVENT, *event_row(record, event))

    async def get(self, tenant: str, interaction_id: str) -> ContractRecord | None:
        row = await self._access.pool.fetchrow(
            f"SELECT {_COLUMNS} FROM contracts WHERE tenant = $1 AND interaction_id = $2",
            tenant,
            interaction_id,
        )
        return record_from(*row) if row is not None else None

    async def list_contracts(
        self, tenant: str, status: str | None, limit: int, after: str
    ) -> list[ContractRecord]:
        where = ["tenant = $1"]
        params: list[Any] = [tenant]
        if status is not None:
            params.append(status)
            where.append(f"status = ${len(params)}")
        if after:
            params.append(after)
            where.append(
                "(created_ms, interaction_id) < (SELECT created_ms, interaction_id FROM"
                f" contracts WHERE tenant = $1 AND interaction_id = ${len(params)})"
            )
        params.append(max(limit, 0))
        rows = await self._access.pool.fetch(
            f"SELECT {_COLUMNS} FROM contracts WHERE {' AND '.join(where)}"
            f" ORDER BY created_ms DESC, interaction_id DESC LIMIT ${len(params)}",
            *params,
        )
        return [record_from(*row) for row in rows]

    async def events(self, tenant: str, interaction_id: str) -> list[Event]:
        rows = await self._access.pool.fetch(
            "SELECT version, kind, at_ms, actor, detail FROM contract_events"
            " WHERE tenant = $1 AND interaction_id = $2 ORDER BY version",
            tenant,
            interaction_id,
        )
        return [event_from(tuple(row)) for row in rows]

    async def due(self, now_ms: int, limit: int) -> list[ContractRecord]:
        rows = await self._access.pool.fetch(
            f"SELECT {_COLUMNS} FROM contracts WHERE due_ms <= $1 ORDER BY due_ms LIMIT $2",
            now_ms,
            max(limit, 0),
        )
        return [record_from(*row) for row in rows]

    async def bind_task(self, tenant: str, interaction_id: str, task_id: str) -> None:
        await self._access.pool.execute(
            "INSERT INTO contract_tasks VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            tenant,
            interaction_id,
            task_id,
        )

    async def bound_tasks(self, tenant: str, interaction_id: str) -> list[str]:
        rows = await self._access.pool.fetch(
            "SELECT task_id FROM contract_tasks WHERE tenant = $1 AND interaction_id = $2"
            " ORDER BY task_id",
            tenant,
            interaction_id,
        )
        return [str(row[0]) for row in rows]

    async def bindings(self, limit: int, after: tuple[str, str, str]) -> list[tuple[str, str, str]]:
        rows = await self._access.pool.fetch(
            "SELECT tenant, interaction_id, task_id FROM contract_tasks"
            " WHERE (tenant, interaction_id, task_id) > ($1, $2, $3)"
            " ORDER BY tenant, interaction_id, task_id LIMIT $4",
            *after,
            max(limit, 0),
        )
        return [(str(a), str(b), str(c)) for a, b, c in rows]

    async def unbind(self, tenant: str, interaction_id: str, task_ids: Sequence[str]) -> None:
        await self._access.pool.execute(
            "DELETE FROM contract_tasks WHERE tenant = $1 AND interaction_id = $2"
            " AND task_id = ANY($3)",
            tenant,
            interaction_id,
            list(task_ids),
        )

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        return await self._access.delete_terminal_tasks(tenant, task_ids)
