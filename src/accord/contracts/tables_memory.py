"""Contracts in memory, beside a MemoryStore (tests, throwaway runs)."""

from __future__ import annotations

from collections.abc import Sequence

from accord.contracts.record import ContractRecord, Event
from accord.contracts.tables import ContractConflict
from accord.core.lifecycle import TERMINAL
from accord.store.memory import MemoryStore


class MemoryContracts:
    def __init__(self, tasks: MemoryStore) -> None:
        self._tasks = tasks
        self._records: dict[tuple[str, str], ContractRecord] = {}
        self._due: dict[tuple[str, str], int | None] = {}
        self._events: dict[tuple[str, str], list[Event]] = {}
        self._bound: set[tuple[str, str, str]] = set()

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
        doomed = []
        for task_id in task_ids:
            found = await self._tasks.get_task(task_id, tenant)
            if found is not None and found.state in TERMINAL:
                doomed.append(task_id)
        self._tasks.delete_tasks(doomed)
        return doomed
