"""The SQLite store's bounded cache of task rows, so that GetTask need not enter SQLite.

A point read through ``sqlite3`` is cheap in SQLite itself but not around it: every read
transaction takes and drops the WAL read locks (``fcntl`` calls), and the module releases and
re-takes the GIL around each step. Under load the read was a fifth to a quarter of a GetTask's
CPU (docs/benchmarks.md). The cache keeps the latest rows of the tasks read or written lately,
up to a byte budget, and lets the least recently used go first; once it is full, only some
read misses get in (``ADMIT_WHEN_FULL``).

It never serves a row older than the database's, because only the store's writer thread
changes tasks, and it tells the cache around each transaction:

- ``begin`` (before the transaction) takes the tasks the batch writes out of the cache and
  marks them busy: until ``end``, readers of a busy task go to SQLite and do not fill. A
  batch that deletes tasks (retention) empties the cache and makes every task busy.
- ``end`` (after COMMIT or ROLLBACK) puts in the rows the transaction committed, before any
  writer is told its write is durable, and clears the marks.
- A reader that missed fills the cache with what it read only if no ``begin`` or ``end``
  happened since it looked (the epoch): a row read before a commit cannot land after it.

Only a writer outside this process (another process writing the same file, which accord does
not do) would go unseen; docs/storage.md says so.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

# tenant, seq, created_ms, updated_ms, snapshot: the columns the store's task reads select
Row = tuple[Any, ...]

# What one cached row costs beyond its snapshot's bytes: the OrderedDict entry, the tuple and
# its integers (~234 bytes under tracemalloc), the 36-character id (85) and the bytes header
# (33).
ROW_OVERHEAD = 352

# Once the cache is full, one read miss in this many may push a row out to make room. Reads
# spread over far more tasks than fit (a scan, uniformly random reads) would otherwise pay a
# fill and an eviction on every miss and push out the rows written lately, for a hit chance
# no better than the cache's share of the tasks; a task read again and again still gets in
# after a few misses. Rows the writer commits are always put in.
ADMIT_WHEN_FULL = 8


class RowCache:
    """Task rows by task id, least recently used first out past ``max_bytes``. Reads take no
    lock: each OrderedDict operation is atomic under the GIL, and the busy set is replaced,
    never changed. (An OrderedDict and not a dict: taking the oldest entry of a dict that
    keeps losing its first entries scans past their empty slots; ``popitem(last=False)`` does
    not.)"""

    def __init__(self, max_bytes: int, admit_when_full: int = ADMIT_WHEN_FULL) -> None:
        self.max_bytes = max_bytes
        self.admit_when_full = admit_when_full
        # A task far larger than its share would push out many small ones for one hit.
        self.max_row_bytes = max_bytes // 16
        self._rows: OrderedDict[str, Row] = OrderedDict()
        self._size = 0
        self._busy: frozenset[str] = frozenset()
        self._all_busy = False
        self._epoch = 0
        self._refused = 0  # read misses met while full: one in admit_when_full gets in
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def size(self) -> int:
        """Bytes accounted to the cached rows."""
        return self._size

    @property
    def epoch(self) -> int:
        """Take it before reading SQLite; hand it to :meth:`fill`."""
        return self._epoch

    def get(self, task_id: str) -> Row | None:
        if self._all_busy or task_id in self._busy:
            return None
        rows = self._rows
        row = rows.get(task_id)
        if row is not None:
            try:  # noqa: SIM105 (contextlib.suppress costs more on every hit)
                rows.move_to_end(task_id)  # used: the last to go
            except KeyError:
                pass  # dropped by the writer thread meanwhile; the row read is still current
        return row

    def fill(self, task_id: str, row: Row, epoch: int) -> None:
        """Cache a row read from SQLite when ``epoch`` was current (and, once the cache is
        full, for one miss in ``admit_when_full``)."""
        cost = _cost(row)
        if cost > self.max_row_bytes:
            return
        if self._size + cost > self.max_bytes:
            self._refused += 1  # unlocked: a lost count only shifts which miss gets in
            if self._refused % self.admit_when_full:
                return
        with self._lock:
            if (
                epoch != self._epoch
                or self._all_busy
                or task_id in self._busy
                or task_id in self._rows
            ):
                return
            self._put(task_id, row)

    # --- the writer thread -----------------------------------------------------------------

    def begin(self, task_ids: Iterable[str] | None) -> None:
        """A transaction will write ``task_ids`` (None: it may delete any task)."""
        with self._lock:
            self._epoch += 1
            if task_ids is None:
                self._all_busy = True
                self._rows = OrderedDict()
                self._size = 0
                return
            busy = frozenset(task_ids)
            for task_id in busy:
                self._drop(task_id)
            self._busy = busy

    def end(self, committed: Iterable[tuple[str, Row]]) -> None:
        """The transaction is over; ``committed`` are the rows it made durable, in order."""
        with self._lock:
            for task_id, row in committed:
                if _cost(row) <= self.max_row_bytes:
                    self._put(task_id, row)
                else:
                    self._drop(task_id)
            self._busy = frozenset()
            self._all_busy = False
            self._epoch += 1

    # --- under the lock ----------------------------------------------------------------------

    def _put(self, task_id: str, row: Row) -> None:
        """Insert or replace ``task_id``'s row as the newest; drop the oldest past the budget."""
        self._drop(task_id)  # a replaced row leaves its place in the order and its bytes
        rows = self._rows
        rows[task_id] = row
        self._size += _cost(row)
        while self._size > self.max_bytes and rows:
            self._size -= _cost(rows.popitem(last=False)[1])

    def _drop(self, task_id: str) -> None:
        row = self._rows.pop(task_id, None)
        if row is not None:
            self._size -= _cost(row)


def _cost(row: Row) -> int:
    return len(row[4]) + ROW_OVERHEAD
