"""Contracts in memory, beside a MemoryStore (tests, throwaway runs): the store keeps the
tables (:class:`ContractRows`, its state of the ``contracts`` extension)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from accord.contracts._record import ContractRecord, Event
from accord.contracts._tables import ContractConflict
from accord.store import MemoryAccess


@dataclass
class ContractRows:
    """The contract tables of one memory store."""

    records: dict[tuple[str, str], ContractRecord] = field(default_factory=dict)
    due: dict[tuple[str, str], int | None] = field(default_factory=dict)
    events: dict[tuple[str, str], list[Event]] = field(default_factory=dict)
    bound: set[tuple[str, str, str]] = field(default_factory=set)

    def forget_tasks(self, task_ids: Collection[str]) -> None:
        """Nothing: a task under a contract stays bound until the contract's retention
        unbinds it (as on SQLite and PostgreSQL)."""


class MemoryContracts:
    def __init__(self, access: MemoryAccess[ContractRows]) -> None:
        self._access = access
        rows = access.state
        self._records = rows.records
        self._due = rows.due
        self._events = rows.events
        self._bound = rows.bound

    async def create(self, record: ContractRecord, event: Event, due_ms: int | None) -> None:
        key = (record.tenant, record.interaction_id)
        found = self._records.get(key)
        if found is not None:
            raise ContractConflict(record.interaction_id, 0, found.version)
        self._records[key] = record
        self._due[key] = due_ms
        self._events[key] = [event]

    async def replace(
        self, record: ContractRecord, expected: int, event: Event, due_ms: int | None
    ) -> None:
        key = (record.tenant, record.interaction_id)
        found = self._records.get(key)
        actual = found.version if found is not None else 0
        if actual != expected:
            raise ContractConflict(record.interaction_id, expected, actual)
        self._records[key] = record
        self._due[key] = due_ms
        self._events[key].append(event)

    async def get(self, tenant: str, interaction_id: str) -> ContractRecord | None:
        return self._records.get((tenant, interaction_id))

    async def list_contracts(
        self, tenant: str, status: str | None, limit: int, after: str
    ) -> list[ContractRecord]:
        mine = [
            r
            for (t, _), r in self._records.items()
            if t == tenant and (status is None or r.status == status)
        ]
        mine.sort(key=lambda r: (r.created_ms, r.interaction_id), reverse=True)
        if after:
            ids = [r.interaction_id for r in mine]
            mine = mine[ids.index(after) + 1 :] if after in ids else []
        return mine[:limit]

    async def events(self, tenant: str, interaction_id: str) -> list[Event]:
        return list(self._events.get((tenant, interaction_id), []))

    async def due(self, now_ms: int, limit: int) -> list[ContractRecord]:
        keys = [k for k, at in self._due.items() if at is not None and at <= now_ms]
        return [self._records[k] for k in sorted(keys)[:limit]]

    async def bind_task(self, tenant: str, interaction_id: str, task_id: str) -> None:
        self._bound.add((tenant, interaction_id, task_id))

    async def bound_tasks(self, tenant: str, interaction_id: str) -> list[str]:
        return sorted(t for (a, b, t) in self._bound if (a, b) == (tenant, interaction_id))

    async def bindings(self, limit: int, after: tuple[str, str, str]) -> list[tuple[str, str, str]]:
        return sorted(b for b in self._bound if b > after)[:limit]

    async def unbind(self, tenant: str, interaction_id: str, task_ids: Sequence[str]) -> None:
        for task_id in task_ids:
            self._bound.discard((tenant, interaction_id, task_id))

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        return await self._access.delete_terminal_tasks(tenant, task_ids)
