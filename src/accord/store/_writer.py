"""The SQLite writer thread: group commit of every queued write.

The thread takes every write waiting in its queue, runs them in one transaction and commits
once (one fsync for the whole batch with ``synchronous=FULL``); then it hands each caller its
result through the caller's event loop (``call_soon_threadsafe``, once per loop per batch).

Statements per batch, not per write: a run of appends is written with a handful of multi-row
statements (one INSERT for the new tasks, one UPDATE … FROM VALUES for the others, one INSERT
for all their events). That matters because CPython's sqlite3 releases the GIL around every
statement step, and getting it back while the event loop thread is busy can take up to the
interpreter's switch interval: statement count, not SQL work, bounds the writer.

Isolation of failures: a multi-row statement that affects fewer rows than it was given means a
SeqConflict somewhere in that round; the round is rolled back to its SAVEPOINT and its writes
are replayed one by one, so only the conflicting ones fail. A creation that would take its
tenant past ``tenant_limit`` (counting the tasks stored, and the creations before it in the
batch) is found before the round writes anything, and the round is replayed the same way:
that creation fails with LimitExceeded, the others commit. A write that fails in any other
way (a constraint, a bug) makes the whole batch roll back and replay with one SAVEPOINT per
write, so it fails alone and the rest commit.

The store's row cache (:mod:`accord.store._row_cache`) hears of every transaction that writes
tasks: which tasks before it, their committed rows after it, before any future is resolved.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from accord.store._row_cache import Row, RowCache
from accord.store.base import LimitExceeded, SeqConflict, StoreError, TaskGone

BATCH_MAX = 1024  # writes per transaction (roughly: hand-overs are not split)
_ROWS_PER_STATEMENT = 256  # keeps statement texts (and SQLite's variable count) bounded

Op = Callable[[sqlite3.Connection], Any]

# What an op raises to refuse a write, before writing anything: the write fails alone and
# the rest of its batch goes on (anything else rolls the batch back and replays it isolated).
REFUSALS = (SeqConflict, LimitExceeded, TaskGone)

EventRow = tuple[str, int, str, int, bytes]  # task_id, seq, kind, at_ms, body


@dataclass(slots=True)
class Append:
    """One ``TaskStore.append``, encoded and ready for SQL."""

    task_id: str
    tenant: str
    context_id: str
    state: int
    created_ms: int
    updated_ms: int
    seq: int
    snapshot: bytes
    expected: int
    events: list[EventRow]
    # False when no event changes the status: then state and updated_ms stay as stored, and
    # the bulk UPDATE leaves the indexes alone (SQLite rewrites an index entry whenever a
    # column of it is assigned, even to the same value).
    status_changed: bool = True
    tenant_limit: int | None = None  # a creation's tasks-per-tenant limit

    def run(self, conn: sqlite3.Connection) -> None:
        """This append on its own. Raises SeqConflict or LimitExceeded before writing
        anything."""
        if self.expected == 0 and self.tenant_limit is not None:
            held = tenant_counts(conn, [self.tenant]).get(self.tenant, 0)
            if held >= self.tenant_limit and not _exists(conn, self.task_id):
                raise LimitExceeded("tasks_per_tenant", self.tenant_limit, self.task_id)
        if self.expected == 0:
            cursor = conn.execute(
                "INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                self.task_row(),
            )
        else:
            cursor = conn.execute(
                "UPDATE tasks SET state = ?, updated_ms = ?, seq = ?, snapshot = ?"
                " WHERE id = ? AND seq = ?",
                (self.state, self.updated_ms, self.seq, self.snapshot, self.task_id, self.expected),
            )
        if cursor.rowcount != 1:
            found = conn.execute("SELECT seq FROM tasks WHERE id = ?", (self.task_id,)).fetchall()
            raise SeqConflict(self.task_id, self.expected, found[0][0] if found else 0)
        conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", self.events)

    def task_row(self) -> tuple[Any, ...]:
        return (
            self.task_id,
            self.tenant,
            self.context_id,
            self.state,
            self.created_ms,
            self.updated_ms,
            self.seq,
            self.snapshot,
        )

    def update_row(self) -> tuple[Any, ...]:
        return (self.task_id, self.expected, self.state, self.updated_ms, self.seq, self.snapshot)

    def cached_row(self) -> Row:
        """The task's row as the store's reads select it."""
        return (self.tenant, self.seq, self.created_ms, self.updated_ms, self.snapshot)


def tenant_counts(conn: sqlite3.Connection, tenants: Sequence[str]) -> dict[str, int]:
    """How many tasks each of ``tenants`` holds, as this transaction sees it."""
    marks = ", ".join("?" * len(tenants))
    rows = conn.execute(
        f"SELECT tenant, SUM(n) FROM task_counts WHERE tenant IN ({marks}) GROUP BY tenant",
        list(tenants),
    ).fetchall()
    return {tenant: int(n) for tenant, n in rows}


def _exists(conn: sqlite3.Connection, task_id: str) -> bool:
    return bool(conn.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchall())


@dataclass(slots=True)
class Write:
    op: Op  # runs on the writer thread; raises one of REFUSALS only before writing
    future: asyncio.Future[Any]
    append: Append | None = None  # set for appends, which are written in bulk
    deletes_tasks: bool = False  # the op may delete any task (the row cache is emptied)


Done = tuple[Write, Any, BaseException | None]  # a write with its result or its error


class Writer(threading.Thread):
    """Owns the write connection; commits queued writes in batches."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        name: str,
        cache: RowCache | None = None,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.connect = connect
        self.cache = cache  # told of every transaction that writes tasks
        # Lists of writes: each event loop hands over what it produced in one iteration.
        self.queue: queue.SimpleQueue[list[Write] | None] = queue.SimpleQueue()
        self.ready = threading.Event()
        self.startup_error: BaseException | None = None
        self.commits = 0  # transactions committed (each one fsync with synchronous=FULL)
        self.writes = 0  # writes those transactions carried
        self.replayed = 0  # appends written one by one because their round had a conflict

    def run(self) -> None:
        try:
            conn = self.connect()
        except BaseException as exc:  # reported to open() through startup_error
            self.startup_error = exc
            self.ready.set()
            return
        self.ready.set()
        try:
            running = True
            while running:
                first = self.queue.get()
                if first is None:
                    break
                batch = list(first)
                while len(batch) < BATCH_MAX:
                    try:
                        item = self.queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        running = False
                        break
                    batch += item
                _resolve(self._commit(conn, batch))
        finally:
            conn.close()

    def _commit(self, conn: sqlite3.Connection, batch: list[Write]) -> list[Done]:
        cache = self.cache
        if cache is None or not _tell_cache(cache, batch):
            return self._transaction(conn, batch)
        done: list[Done] = []
        try:
            done = self._transaction(conn, batch)
        finally:
            cache.end(
                (write.append.task_id, write.append.cached_row())
                for write, _, error in done
                if error is None and write.append is not None
            )
        return done

    def _transaction(self, conn: sqlite3.Connection, batch: list[Write]) -> list[Done]:
        try:
            conn.execute("BEGIN IMMEDIATE")
            replayed: list[int] = []
            done = _apply(conn, batch, replayed)
            if done is None:  # a write failed halfway: undo the batch, redo it isolated
                conn.execute("ROLLBACK")
                conn.execute("BEGIN IMMEDIATE")
                done = _apply_isolated(conn, batch)
            conn.execute("COMMIT")
            self.commits += 1
            self.writes += len(batch)
            self.replayed += sum(replayed)
        except Exception as exc:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            error = StoreError(f"commit failed: {exc}")
            return [(write, None, error) for write in batch]
        return done


def _tell_cache(cache: RowCache, batch: list[Write]) -> bool:
    """Mark the tasks ``batch`` writes busy in ``cache``; False if it writes none."""
    task_ids: set[str] = set()
    for write in batch:
        if write.deletes_tasks:
            cache.begin(None)
            return True
        if write.append is not None:
            task_ids.add(write.append.task_id)
    if not task_ids:
        return False
    cache.begin(task_ids)
    return True


def _apply(conn: sqlite3.Connection, batch: list[Write], replayed: list[int]) -> list[Done] | None:
    """The fast path; None when a write failed in a way only isolation can contain."""
    done: list[Done] = []
    start = 0
    while start < len(batch):
        end = start
        while end < len(batch) and batch[end].append is not None:
            end += 1
        if end > start:
            appended = _apply_appends(conn, batch[start:end], replayed)
            if appended is None:
                return None
            done += appended
            start = end
            continue
        write = batch[start]
        try:
            done.append((write, write.op(conn), None))
        except REFUSALS as exc:
            done.append((write, None, exc))
        except Exception:
            return None
        start += 1
    return done


def _apply_isolated(conn: sqlite3.Connection, batch: list[Write]) -> list[Done]:
    done: list[Done] = []
    for write in batch:
        conn.execute("SAVEPOINT w")
        try:
            value = write.op(conn)
        except Exception as exc:
            conn.execute("ROLLBACK TO w")
            conn.execute("RELEASE w")
            done.append((write, None, _store_error(exc)))
        else:
            conn.execute("RELEASE w")
            done.append((write, value, None))
    return done


def _apply_appends(
    conn: sqlite3.Connection, writes: list[Write], replayed: list[int]
) -> list[Done] | None:
    # Rounds: a task appears at most once per round (a multi-row UPDATE must not match one
    # row twice), and its appends keep their order across rounds.
    rounds: list[list[Write]] = []
    depth: dict[str, int] = {}
    for write in writes:
        assert write.append is not None
        index = depth.get(write.append.task_id, 0)
        depth[write.append.task_id] = index + 1
        if index == len(rounds):
            rounds.append([])
        rounds[index].append(write)

    done: list[Done] = []
    for round_ in rounds:
        conn.execute("SAVEPOINT r")
        try:
            clean = _bulk(conn, [w.append for w in round_ if w.append is not None])
        except Exception:
            return None
        if clean:
            conn.execute("RELEASE r")
            done += [(write, None, None) for write in round_]
            continue
        replayed.append(len(round_))
        conn.execute("ROLLBACK TO r")  # someone conflicts: find out who, one by one
        conn.execute("RELEASE r")
        for write in round_:
            try:
                done.append((write, write.op(conn), None))
            except REFUSALS as exc:
                done.append((write, None, exc))
            except Exception:
                return None
    return done


def _bulk(conn: sqlite3.Connection, appends: list[Append]) -> bool:
    """Write a round with multi-row statements; False if any append conflicted or a creation
    is over its limit (the caller rolls the round back). Other failures raise."""
    if not _within_limits(conn, [a for a in appends if a.expected == 0]):
        return False
    creates = [a.task_row() for a in appends if a.expected == 0]
    moves = [a.update_row() for a in appends if a.expected != 0 and a.status_changed]
    edits = [a.update_row() for a in appends if a.expected != 0 and not a.status_changed]
    for rows in _chunks(creates):
        cursor = conn.execute(
            "INSERT INTO tasks VALUES "
            + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows))
            + " ON CONFLICT (id) DO NOTHING",
            [value for row in rows for value in row],
        )
        if cursor.rowcount != len(rows):
            return False
    # VALUES columns are column1 … column6 in update_row() order. (Not a WITH clause: Python's
    # sqlite3 reports no rowcount for a statement that does not start with its DML keyword.)
    for rows in _chunks(moves):
        cursor = conn.execute(
            "UPDATE tasks SET state = v.column3, updated_ms = v.column4, seq = v.column5,"
            " snapshot = v.column6 FROM (VALUES "
            + ", ".join(["(?, ?, ?, ?, ?, ?)"] * len(rows))
            + ") AS v WHERE tasks.id = v.column1 AND tasks.seq = v.column2",
            [value for row in rows for value in row],
        )
        if cursor.rowcount != len(rows):
            return False
    for rows in _chunks(edits):
        # Also a conflict (replayed one by one, with the full UPDATE) if the state or the
        # status time differ after all.
        cursor = conn.execute(
            "UPDATE tasks SET seq = v.column5, snapshot = v.column6 FROM (VALUES "
            + ", ".join(["(?, ?, ?, ?, ?, ?)"] * len(rows))
            + ") AS v WHERE tasks.id = v.column1 AND tasks.seq = v.column2"
            " AND tasks.state = v.column3 AND tasks.updated_ms = v.column4",
            [value for row in rows for value in row],
        )
        if cursor.rowcount != len(rows):
            return False
    events = [row for a in appends for row in a.events]
    for rows in _chunks(events):
        conn.execute(
            "INSERT INTO events VALUES " + ", ".join(["(?, ?, ?, ?, ?)"] * len(rows)),
            [value for row in rows for value in row],
        )
    return True


def _within_limits(conn: sqlite3.Connection, creates: list[Append]) -> bool:
    """False if a creation with a limit would find its tenant full, counting the creations
    before it in ``creates`` (the order they are inserted, and replayed, in)."""
    limited = {a.tenant for a in creates if a.tenant_limit is not None}
    if not limited:
        return True
    held = tenant_counts(conn, sorted(limited))
    for append in creates:
        if append.tenant not in limited:
            continue
        count = held.get(append.tenant, 0)
        if append.tenant_limit is not None and count >= append.tenant_limit:
            return False
        held[append.tenant] = count + 1
    return True


def _chunks(rows: Sequence[tuple[Any, ...]]) -> list[Sequence[tuple[Any, ...]]]:
    """``rows`` in chunks whose sizes are powers of two (largest first, at most
    _ROWS_PER_STATEMENT): a handful of distinct statement texts per kind, which stay in the
    connection's statement cache. Compiling a multi-row statement costs about as much as
    running it, so one text per batch size would double the writer's work."""
    chunks: list[Sequence[tuple[Any, ...]]] = []
    start = 0
    while start < len(rows):
        size = min(_ROWS_PER_STATEMENT, 1 << ((len(rows) - start).bit_length() - 1))
        chunks.append(rows[start : start + size])
        start += size
    return chunks


def _store_error(exc: Exception) -> Exception:
    if isinstance(exc, StoreError):
        return exc
    error = StoreError(f"{type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


def _resolve(done: list[Done]) -> None:
    """Hand the results to each caller's event loop (one wake-up per loop per batch)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Done]] = {}
    for item in done:
        by_loop.setdefault(item[0].future.get_loop(), []).append(item)
    for loop, items in by_loop.items():
        # A closed loop raises RuntimeError: nobody is waiting there any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, items)


def _settle(items: list[Done]) -> None:
    for write, value, error in items:
        future = write.future
        if future.done():  # the caller was cancelled; the write itself stands
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)
