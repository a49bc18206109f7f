"""In-memory TaskStore: plain dicts, for tests and throwaway use.

Records and events are kept as given, not copied: they are immutable by convention (the core
always builds new ones). Semantics match the SQLite store, which the shared test suite checks;
list and scan costs grow with the number of tasks, which is fine at this scale.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from accord.core.events import Event
from accord.core.lifecycle import TERMINAL
from accord.core.records import PushConfigRecord, TaskRecord
from accord.core.views import Cursor, TaskQuery, after_cursor, matches, sort_key
from accord.store._checks import check_append
from accord.store.base import SeqConflict, TaskPage
from accord.wire.model import TaskState


class MemoryStore:
    def __init__(self) -> None:
        self._tasks: dict[str, TaskRecord] = {}
        self._events: dict[str, list[Event]] = {}
        # task id -> config id -> record; dict order is insertion order (oldest first).
        self._push: dict[str, dict[str, PushConfigRecord]] = {}

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        pass

    # --- tasks and their logs --------------------------------------------------------------

    async def append(self, record: TaskRecord, events: Sequence[Event], expected_seq: int) -> None:
        check_append(record, events, expected_seq)
        current = self._tasks.get(record.id)
        actual = current.seq if current is not None else 0
        if actual != expected_seq:
            raise SeqConflict(record.id, expected_seq, actual)
        self._events.setdefault(record.id, []).extend(events)
        self._tasks[record.id] = record

    async def get_task(self, task_id: str, tenant: str | None) -> TaskRecord | None:
        record = self._tasks.get(task_id)
        if record is None or (tenant is not None and record.tenant != tenant):
            return None
        return record

    async def read_events(self, task_id: str, after_seq: int, limit: int = 1000) -> list[Event]:
        log = self._events.get(task_id)
        if not log or limit <= 0:
            return []
        start = max(after_seq, 0)  # seqs are 1, 2, 3 …: event n sits at index n - 1
        return log[start : start + limit]

    async def list_tasks(self, query: TaskQuery) -> TaskPage:
        matching = [r for r in self._tasks.values() if matches(r, query)]
        candidates = (r for r in matching if after_cursor(r, query.after))
        page = heapq.nlargest(query.page_size + 1, candidates, key=sort_key)
        next_cursor = None
        if len(page) > query.page_size:
            del page[query.page_size :]
            last = page[-1]
            next_cursor = Cursor(last.updated_ms, last.id)
        return TaskPage(records=page, total_size=len(matching), next_cursor=next_cursor)

    async def count_tasks(self, tenant: str) -> int:
        return sum(1 for r in self._tasks.values() if r.tenant == tenant)

    async def tasks_in_states(
        self, states: frozenset[TaskState], limit: int = 1000, after_id: str = ""
    ) -> list[TaskRecord]:
        found = (r for r in self._tasks.values() if r.state in states and r.id > after_id)
        return heapq.nsmallest(limit, found, key=lambda r: r.id)

    async def delete_terminal_before(self, cutoff_ms: int, limit: int = 1000) -> int:
        doomed = [
            r.id for r in self._tasks.values() if r.state in TERMINAL and r.updated_ms < cutoff_ms
        ][:limit]
        for task_id in doomed:
            del self._tasks[task_id]
            self._events.pop(task_id, None)
            self._push.pop(task_id, None)
        return len(doomed)

    # --- push-notification configs ---------------------------------------------------------

    async def put_push_config(self, config: PushConfigRecord) -> None:
        self._push.setdefault(config.config.task_id, {})[config.config.id] = config

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        return self._push.get(task_id, {}).get(config_id)

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        return list(self._push.get(task_id, {}).values())

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        configs = self._push.get(task_id)
        if configs is None or configs.pop(config_id, None) is None:
            return False
        if not configs:
            del self._push[task_id]
        return True

    async def all_push_configs(
        self, limit: int = 1000, after: tuple[str, str] = ("", "")
    ) -> list[PushConfigRecord]:
        found = (
            (key, record)
            for task_id, configs in self._push.items()
            for config_id, record in configs.items()
            if (key := (task_id, config_id)) > after
        )
        return [record for _, record in heapq.nsmallest(limit, found, key=lambda kv: kv[0])]
