"""The table's pages: the Tasks view of the store, newest status first, in pages of at most
100, with state, context and text filters.

State and context are the store's own filters: answered by its indexes, a page costs the
same with a hundred tasks or millions. A page goes on from a signed keyset token (the one
ListTasks hands out), so page 2,000 costs what page 1 costs.

The text, and the tasks an agent's access check hides from the caller (the harness's
conversations it is not in), are matched here, on the records the store pages through: a
request examines at most ``SCAN_LIMIT`` tasks. When that ends the search before the page
is full, the answer says so (``exhausted`` false) and its token goes on after the last task
examined: the table shows what was found and offers to search further, and no request ever
reads the whole store. ``scanned`` counts the tasks examined that the caller may see, never
the others. A text that is the id of a task the caller may see is looked up directly; the
id of a task it may not see is searched for like any text (and found nowhere), so that the
answer is the one an unknown id gets.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from accord.core.views import MAX_PAGE_SIZE, Cursor, TaskQuery
from accord.dashboard.rows import Filters, row
from accord.dashboard.scope import Viewer
from accord.engine.engine import PAGE_TOKEN_SECRET
from accord.store.base import TaskStore

SCAN_LIMIT = 2000  # tasks one request may examine for a text or the access check
DEFAULT_SIZE = 50


@dataclass(frozen=True, slots=True)
class Page:
    rows: list[dict[str, Any]]
    next_token: str  # "" on the last page
    total: int | None  # the store's count of the filtered tasks; None when not known
    scanned: int  # tasks examined that the caller may see
    exhausted: bool  # the page is full or the tasks ran out (not cut by SCAN_LIMIT)

    def body(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "next": self.next_token,
            "total": self.total,
            "scanned": self.scanned,
            "exhausted": self.exhausted,
        }


async def token_key(store: TaskStore) -> bytes:
    """The key that signs page tokens: ListTasks's own, so a token is good for either."""
    return await store.shared_secret(PAGE_TOKEN_SECRET)


async def page(
    store: TaskStore,
    viewer: Viewer,
    filters: Filters,
    *,
    size: int = DEFAULT_SIZE,
    token: str = "",
    key: bytes,
) -> Page:
    """One page of ``viewer``'s tasks that match ``filters``, after ``token``."""
    size = max(1, min(size, MAX_PAGE_SIZE))
    after = Cursor.parse(token, key) if token else None
    if filters.text and not token:
        found = await store.get_task(filters.text.strip(), viewer.tenant)
        if found is not None and viewer.sees(found.task):
            # A task id: that task, if it passes the other filters. (One the caller may not
            # see is searched for as text below, exactly as an unknown id is.)
            shown = filters.matches(found)
            return Page([row(found)] if shown else [], "", None, 1, True)
    query = TaskQuery(
        tenant=viewer.tenant,
        context_id=filters.context_id,
        status=filters.state,
        page_size=size,
        after=after,
    )
    if not filters.text and viewer.sees_whole_tenant:
        # The store's page as it is: its count, its token.
        stored = await store.list_tasks(query)
        next_token = stored.next_cursor.token(key) if stored.next_cursor else ""
        rows = [row(record) for record in stored.records]
        return Page(rows, next_token, stored.total_size, len(rows), True)
    return await _scan(store, viewer, filters, query, size, key)


async def _scan(
    store: TaskStore, viewer: Viewer, filters: Filters, query: TaskQuery, size: int, key: bytes
) -> Page:
    rows: list[dict[str, Any]] = []
    examined = 0
    scanned = 0  # of those, the tasks the caller may see
    last: Cursor | None = None
    query = dataclasses.replace(query, page_size=MAX_PAGE_SIZE)
    more = True
    while more and len(rows) < size and examined < SCAN_LIMIT:
        stored = await store.list_tasks(query)
        for record in stored.records:
            examined += 1
            last = Cursor(record.updated_ms, record.id)
            if viewer.sees(record.task):
                scanned += 1  # (the tasks the caller may not see are not counted)
                if filters.matches_text(record.task):
                    rows.append(row(record))
                    if len(rows) == size:
                        break
            if examined >= SCAN_LIMIT:
                break
        else:
            more = stored.next_cursor is not None
            query = dataclasses.replace(query, after=stored.next_cursor)
            continue
        break
    exhausted = len(rows) == size or not more
    next_token = last.token(key) if more and last is not None else ""
    return Page(rows, next_token, None, scanned, exhausted)
