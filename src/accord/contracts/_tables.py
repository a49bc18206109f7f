"""Contract storage: each tenant's contracts (their records, compare-and-swap on
``version``), each contract's log of moves, and the tasks that ran under it.

The tables live in the task store's database, declared as its ``contracts`` extension
(:data:`CONTRACT_TABLES`, migrations in :mod:`accord.contracts._tables_schema`), so
:func:`contract_store` registers them with a task store before it opens and wraps it; a
memory store keeps them in dicts. Every write
of a record goes only over the version it was decided from: a writer that lost a race gets
:class:`ContractConflict` and nothing changes (so of an accept and a cancel racing, exactly
one wins).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from accord.contracts import _tables_schema as tables_schema
from accord.contracts._record import ContractRecord, Event
from accord.store import StoreError, StoreExtension, TaskStore

if TYPE_CHECKING:
    from accord.contracts._tables_memory import ContractRows


class ContractConflict(StoreError):
    """The record changed since it was read (or exists already, for a create)."""

    def __init__(self, interaction_id: str, expected: int, actual: int) -> None:
        super().__init__(
            f"contract {interaction_id} is at version {actual}, not {expected}: "
            "it changed meanwhile"
        )
        self.interaction_id = interaction_id
        self.expected = expected
        self.actual = actual


class ContractStore(Protocol):
    async def create(self, record: ContractRecord, event: Event, due_ms: int | None) -> None:
        """Store a new contract (version 1); ContractConflict when the id is taken."""
        ...

    async def replace(
        self, record: ContractRecord, expected: int, event: Event, due_ms: int | None
    ) -> None:
        """Store ``record`` over version ``expected`` with its event; ContractConflict when
        the stored version is another."""
        ...

    async def get(self, tenant: str, interaction_id: str) -> ContractRecord | None: ...

    async def list_contracts(
        self, tenant: str, status: str | None, limit: int, after: str
    ) -> list[ContractRecord]:
        """The tenant's contracts, newest first, ``after`` the id of the last one seen."""
        ...

    async def events(self, tenant: str, interaction_id: str) -> list[Event]: ...

    async def due(self, now_ms: int, limit: int) -> list[ContractRecord]:
        """Records of any tenant the sweeper must look at by now."""
        ...

    async def bind_task(self, tenant: str, interaction_id: str, task_id: str) -> None: ...

    async def bound_tasks(self, tenant: str, interaction_id: str) -> list[str]: ...

    async def bindings(self, limit: int, after: tuple[str, str, str]) -> list[tuple[str, str, str]]:
        """(tenant, interaction id, task id) of every task under a contract, in that order."""
        ...

    async def unbind(self, tenant: str, interaction_id: str, task_ids: Sequence[str]) -> None: ...

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        """Delete those of the tenant's tasks that are terminal, with their logs, push configs
        and feed entries (a contract's retention); returns the ids deleted."""
        ...


def state_json(record: ContractRecord) -> bytes:
    return json.dumps(record.state(), separators=(",", ":"), ensure_ascii=False).encode()


def document_json(record: ContractRecord) -> bytes:
    return json.dumps(record.document, separators=(",", ":"), ensure_ascii=False).encode()


def event_json(event: Event) -> bytes:
    return json.dumps(event.detail, separators=(",", ":"), ensure_ascii=False).encode()


def event_row(record: ContractRecord, event: Event) -> tuple[Any, ...]:
    """The values of a ``contract_events`` row, in column order."""
    return (
        record.tenant,
        record.interaction_id,
        event.version,
        event.kind,
        event.at_ms,
        event.actor,
        event_json(event),
    )


def record_row(record: ContractRecord, due_ms: int | None) -> tuple[Any, ...]:
    """The values of a new ``contracts`` row: tenant, interaction_id, status, version,
    created_ms, due_ms, document, state."""
    return (
        record.tenant,
        record.interaction_id,
        record.status,
        record.version,
        record.created_ms,
        due_ms,
        document_json(record),
        state_json(record),
    )


def record_from(
    tenant: str, version: int, document: bytes | str, state: bytes | str
) -> ContractRecord:
    return ContractRecord.from_stored(tenant, version, json.loads(document), json.loads(state))


def event_from(row: Sequence[Any]) -> Event:
    version, kind, at_ms, actor, detail = row
    return Event(int(version), str(kind), int(at_ms), str(actor), json.loads(detail))


def _memory_rows() -> ContractRows:
    from accord.contracts._tables_memory import ContractRows

    return ContractRows()


CONTRACT_TABLES: StoreExtension[ContractRows] = StoreExtension(
    name="contracts",
    memory=_memory_rows,
    sqlite=tables_schema.SQLITE,
    postgresql=tables_schema.POSTGRESQL,
    # (none: a task under a contract stays bound until the contract's retention unbinds it)
    task_rows=(),
)


def contract_store(store: TaskStore) -> ContractStore:
    """The contract store beside ``store`` (same database, same lifetime). The first call
    registers the contract tables with ``store``, which must not be open yet."""
    access = store.extend(CONTRACT_TABLES)
    if access.dialect == "sqlite":
        from accord.contracts._tables_sqlite import SqliteContracts

        return SqliteContracts(access)
    if access.dialect == "postgresql":
        from accord.contracts._tables_pg import PgContracts

        return PgContracts(access)
    from accord.contracts._tables_memory import MemoryContracts

    return MemoryContracts(access)
