"""The SQLite writer thread: group commit of every queued write.

The thread takes every write waiting in its queue, runs them in one transaction and commits
once (one fsync for the whole batch with ``synchronous=FULL``); then it hands each caller its
result through the caller's event loop (``call_soon_threadsafe``, once per loop per batch).

Statements per batch, not per write (see :mod:`accord.store._appends`): a batch of appends
only is usually one INSERT into the ``append_rows`` view, run in autocommit mode, so the
statement is the whole transaction. Other batches run in an explicit transaction.

Isolation of failures: when that statement is refused (a seq conflict, a tenant limit, a task
created twice), it changed nothing; the batch is then written in an explicit transaction, its
appends one by one, so only the refused ones fail. (A batch written in an explicit transaction
in the first place has its runs of appends written in bulk after a SAVEPOINT, and one by one
only if refused.) A write that fails in any other way (a bug, a full disk) makes the whole
batch roll back and replay with one SAVEPOINT per write, so it fails alone and the rest
commit.

The store's row cache (:mod:`accord.store._row_cache`) hears of every transaction that writes
tasks: which tasks before it, their committed rows after it, before any future is resolved.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from accord.store._appends import APPEND_ROWS, ROWS_PER_STATEMENT, Append, statements
from accord.store._base import DuplicateRequest, LimitExceeded, SeqConflict, StoreError, TaskGone
from accord.store._row_cache import RowCache
from accord.telemetry import CommitStats

BATCH_MAX = 1024  # writes per transaction (roughly: hand-overs are not split)
Op = Callable[[sqlite3.Connection], Any]

# What an op raises to refuse a write, before writing anything: the write fails alone and
# the rest of its batch goes on (anything else rolls the batch back and replays it isolated).
REFUSALS = (SeqConflict, LimitExceeded, TaskGone, DuplicateRequest)


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
        self.replayed = 0  # appends written one by one because an append of their run was refused
        self.metrics = CommitStats()  # for /metrics: writes per commit, commit durations

    def run(self) -> None:
        try:
            conn = self.connect()
            for statement in APPEND_ROWS:
                conn.execute(statement)
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
        metrics = self.metrics
        failures, started = metrics.failures, time.perf_counter()
        done = self._cached_transaction(conn, batch)
        if metrics.failures == failures:  # (a failed commit is counted as one, not timed)
            metrics.committed(len(batch), time.perf_counter() - started)
        return done

    def _cached_transaction(self, conn: sqlite3.Connection, batch: list[Write]) -> list[Done]:
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
        committed = _in_one_statement(conn, batch)
        if committed:
            self.commits += 1
            self.writes += len(batch)
            return [(write, None, None) for write in batch]
        try:
            conn.execute("BEGIN IMMEDIATE")
            replayed: list[int] = []
            # A statement that was refused would be refused again: straight to one by one.
            done = _apply(conn, batch, replayed, bulk=committed is None)
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
            self.metrics.failures += 1
            error = StoreError(f"commit failed: {exc}")
            return [(write, None, error) for write in batch]
        return done


def _in_one_statement(conn: sqlite3.Connection, batch: list[Write]) -> bool | None:
    """Commit ``batch`` as one INSERT into append_rows in autocommit mode, if it is appends
    only and their rows fit one statement: True if committed, False if the statement failed
    (it changed nothing), None if the batch is not for one statement. Either way but True,
    the caller writes the batch in an explicit transaction."""
    rows: list[tuple[Any, ...]] = []
    for write in batch:
        if write.append is None:
            return None
        rows += write.append.rows()
    if len(rows) > ROWS_PER_STATEMENT:
        return None
    (statement,) = statements(rows)
    try:
        conn.execute(*statement)
    except sqlite3.Error:  # refused (a conflict, a limit) or failed: sorted out write by write
        return False
    return True


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


def _apply(
    conn: sqlite3.Connection, batch: list[Write], replayed: list[int], *, bulk: bool
) -> list[Done] | None:
    """The fast path (runs of appends in bulk unless ``bulk`` is False); None when a write
    failed in a way only isolation can contain."""
    done: list[Done] = []
    start = 0
    while start < len(batch):
        end = start
        while end < len(batch) and batch[end].append is not None:
            end += 1
        if end == start:  # another kind of write
            end = start + 1
            written = _one_by_one(conn, batch[start:end])
        else:
            run = batch[start:end]
            try:
                written = _apply_appends(conn, run) if bulk else None
            except Exception:
                return None
            if written is None:  # refused (or known to be): find out which, one by one
                replayed.append(len(run))
                written = _one_by_one(conn, run)
        if written is None:
            return None
        done += written
        start = end
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


def _apply_appends(conn: sqlite3.Connection, writes: list[Write]) -> list[Done] | None:
    """A run of appends in bulk; None if any of them was refused (nothing of the run is
    written then). Other failures raise."""
    rows = [row for write in writes if write.append is not None for row in write.append.rows()]
    conn.execute("SAVEPOINT r")
    try:
        for statement in statements(rows):
            conn.execute(*statement)
    except sqlite3.IntegrityError:
        conn.execute("ROLLBACK TO r")
        conn.execute("RELEASE r")
        return None
    conn.execute("RELEASE r")
    return [(write, None, None) for write in writes]


def _one_by_one(conn: sqlite3.Connection, writes: list[Write]) -> list[Done] | None:
    """Each write on its own, so that only the refused ones fail; None when a write failed in
    a way only isolation can contain."""
    done: list[Done] = []
    for write in writes:
        try:
            done.append((write, write.op(conn), None))
        except REFUSALS as exc:
            done.append((write, None, exc))
        except Exception:
            return None
    return done


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
