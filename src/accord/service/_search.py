"""The tasks a caller may see, page by page, newest status first, in pages of at most 100,
with state, context and text filters (the dashboard's table).

State and context are the store's own filters: answered by its indexes, a page costs the
same with a hundred tasks or millions. A page goes on from a signed keyset token (the one
ListTasks hands out), so page 2,000 costs what page 1 costs.

The text, and the tasks an agent's access check hides from the caller (the harness's
conversations it is not in), are matched here, on the records the store pages through: a
request examines at most ``SCAN_LIMIT`` tasks. When that ends the search before the page
is full, the answer says so (``exhausted`` false) and its token goes on after the last task
examined: the caller is told what was found and may search further, and no request ever
reads the whole store. ``scanned`` counts the tasks examined that the caller may see, never
the others. A text that is the id of a task the caller may see is looked up directly; the
id of a task it may not see is searched for like any text (and found nowhere), so that the
answer is the one an unknown id gets.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

from accord.core import TaskRecord
from accord.core.views import MAX_PAGE_SIZE, Cursor, TaskQuery
from accord.service._access import Reader
from accord.service._operations import Service
from accord.wire import Task, TaskState

SCAN_LIMIT = 2000  # tasks one request may examine for a text or the access check


class Filter(Protocol):
    """What the tasks are narrowed to: a state and a context (the store's filters) and a
    text, which the reader of the tasks matches its own way."""

    @property
    def state(self) -> TaskState | None: ...

    @property
    def context_id(self) -> str: ...

    @property
    def text(self) -> str: ...

    def matches(self, record: TaskRecord) -> bool:
        """Whether ``record`` passes every filter."""

    def matches_text(self, task: Task) -> bool:
        """Whether ``task`` matches the text."""


@dataclass(frozen=True, slots=True)
class Found:
    records: list[TaskRecord]
    next_token: str  # "" on the last page
    total: int | None  # the store's count of the filtered tasks; None when not known
    scanned: int  # tasks examined that the caller may see
    exhausted: bool  # the page is full or the tasks ran out (not cut by SCAN_LIMIT)


async def search(
    service: Service, reader: Reader, filters: Filter, *, size: int, token: str = ""
) -> Found:
    """One page of the reader's tasks that match ``filters``, after ``token``."""
    reader.require("tasks")
    store = service.engine.store
    key = await service.page_token_key()
    size = max(1, min(size, MAX_PAGE_SIZE))
    after = Cursor.parse(token, key) if token else None
    if filters.text and not token:
        found = await store.get_task(filters.text.strip(), reader.tenant)
        if found is not None and reader.sees(found.task):
            # A task id: that task, if it passes the other filters. (One the caller may not
            # see is searched for as text below, exactly as an unknown id is.)
            return Found([found] if filters.matches(found) else [], "", None, 1, True)
    query = TaskQuery(
        tenant=reader.tenant,
        context_id=filters.context_id,
        status=filters.state,
        page_size=size,
        after=after,
    )
    if not filters.text and reader.sees_whole_tenant:
        # The store's page as it is: its count, its token.
        stored = await store.list_tasks(query)
        next_token = stored.next_cursor.token(key) if stored.next_cursor else ""
        records = list(stored.records)
        return Found(records, next_token, stored.total_size, len(records), True)
    return await _scan(service, reader, filters, query, size, key)


async def _scan(
    service: Service, reader: Reader, filters: Filter, query: TaskQuery, size: int, key: bytes
) -> Found:
    store = service.engine.store
    records: list[TaskRecord] = []
    examined = 0
    scanned = 0  # of those, the tasks the caller may see
    last: Cursor | None = None
    query = dataclasses.replace(query, page_size=MAX_PAGE_SIZE)
    more = True
    while more and len(records) < size and examined < SCAN_LIMIT:
        stored = await store.list_tasks(query)
        for record in stored.records:
            examined += 1
            last = Cursor(record.updated_ms, record.id)
            if reader.sees(record.task):
                scanned += 1  # (the tasks the caller may not see are not counted)
                if filters.matches_text(record.task):
                    records.append(record)
                    if len(records) == size:
                        break
            if examined >= SCAN_LIMIT:
                break
        else:
            more = stored.next_cursor is not None
            query = dataclasses.replace(query, after=stored.next_cursor)
            continue
        break
    exhausted = len(records) == size or not more
    next_token = last.token(key) if more and last is not None else ""
    return Found(records, next_token, None, scanned, exhausted)
