"""SQLite TaskStore (stdlib ``sqlite3``, WAL): the durable default.

Writes go through one writer thread with group commit (:mod:`accord.store._writer`): every
write waiting in the queue joins one transaction, which commits once (one fsync for the
batch), and only then are the callers' futures resolved. A failing write (a SeqConflict, a
constraint) is rolled back alone and the rest of the batch still commits.

Reads run synchronously on the caller's thread, on a separate connection with
``query_only``: in WAL mode a reader never waits for the writer, and a point read takes
microseconds, far less than a hop to a worker thread would (see docs/storage.md for the
numbers). Task point reads (GetTask) are served from a bounded cache of task rows that the
writer keeps current (:mod:`accord.store._row_cache`); with SQLite's bounded page cache, memory
does not grow with the number of stored tasks.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple, TypeVar

from accord.core import Event, PushConfigRecord, RequestKey, TaskRecord
from accord.core.views import Cursor, TaskQuery
from accord.store import _migrations as migrations
from accord.store import _rows
from accord.store import _sqlite_lock as sqlite_lock
from accord.store._appends import STATEMENT_CACHE, Append, tenant_counts
from accord.store._base import (
    DeliveryState,
    FeedEntry,
    LimitExceeded,
    PushDelivery,
    StoredRequest,
    StoreError,
    TaskGone,
    TaskPage,
    new_secret,
)
from accord.store._checks import check_append
from accord.store._extensions import Extensions, S, SqliteAccess, StoreExtension, TaskRows
from accord.store._row_cache import Row, RowCache
from accord.store._sqlite_close import skip_checkpoint_on_close
from accord.store._writer import Op, Write, Writer
from accord.telemetry import CommitStats as CommitMetrics
from accord.wire import TaskState, encode

T = TypeVar("T")

_SYNCHRONOUS = ("FULL", "NORMAL")
_HAND_OVER_MAX = 64  # writes gathered on the loop before the writer is woken anyway
DEFAULT_ROW_CACHE_KIB = 4096  # ~5,000 small tasks (a 500-byte snapshot each)

_TASK_COLUMNS = "tenant, seq, created_ms, updated_ms, snapshot"
_TASK_COLUMNS_OF_T = "t.tenant, t.seq, t.created_ms, t.updated_ms, t.snapshot"
_GET_TASK = f"SELECT {_TASK_COLUMNS} FROM tasks WHERE id = ?"


class CommitStats(NamedTuple):
    commits: int  # transactions (one fsync each with synchronous=FULL)
    writes: int  # writes they carried
    replayed: int  # appends written one by one because an append of their run was refused


def _connect(path: str, synchronous: str) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, cached_statements=STATEMENT_CACHE
    )
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute("PRAGMA journal_size_limit = 67108864")
    conn.execute("PRAGMA temp_store = MEMORY")
    return conn


def _serving_connection(path: str, synchronous: str) -> sqlite3.Connection:
    """A connection of the open store (the writer's, the reader): it closes without a
    checkpoint, so that a stop never waits on an fsync of the whole file
    (:mod:`accord.store._sqlite_close`)."""
    conn = _connect(path, synchronous)
    skip_checkpoint_on_close(conn)
    return conn


class SqliteStore:
    """A TaskStore in one SQLite file.

    ``synchronous`` is ``"FULL"`` (the default: a commit is on disk before anyone is told, so
    it survives a power loss too) or ``"NORMAL"`` (a commit is in the OS before anyone is told:
    it survives the process being killed, not the machine losing power).
    ``cache_kib`` bounds SQLite's page cache per connection; ``row_cache_kib`` the cache of
    task rows that point reads use (0: none, every read goes to SQLite).
    ``exclusive`` (the default) holds the file against every other process while the store is
    open (:mod:`accord.store._sqlite_lock`): ``open()`` raises FileInUse when another process
    holds it. False only for a reader beside a running server (``accord admin``).
    """

    def __init__(
        self,
        path: str,
        *,
        synchronous: str = "FULL",
        cache_kib: int = 2048,
        row_cache_kib: int = DEFAULT_ROW_CACHE_KIB,
        exclusive: bool = True,
    ) -> None:
        synchronous = synchronous.upper()
        if synchronous not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {_SYNCHRONOUS}, not {synchronous!r}")
        self.path = path
        self.synchronous = synchronous
        self.cache_kib = cache_kib
        self.exclusive = exclusive
        self._holding = False
        if row_cache_kib < 0:
            raise ValueError(f"row_cache_kib must be 0 or more, not {row_cache_kib}")
        self.row_cache = RowCache(row_cache_kib * 1024) if row_cache_kib else None
        self._writer: Writer | None = None
        self._closed_stats = CommitStats(0, 0, 0)
        # Writes made during the current iteration of each event loop, handed to the writer
        # together at the end of it: one queue operation and one wake-up of the writer thread
        # per iteration instead of per write, and the writer starts on a full batch.
        self._pending: dict[asyncio.AbstractEventLoop, list[Write]] = {}
        self._reader: sqlite3.Connection | None = None
        self._extensions = Extensions()
        # Tables of the database's extensions whose rows go with their task (read at open).
        self._task_rows: list[TaskRows] = []

    def extend(self, extension: StoreExtension[S]) -> SqliteAccess:
        """Register a feature's tables (:mod:`accord.store._extensions`), before open()."""
        self._extensions.add(extension, store_open=self._writer is not None)
        return _Access(self)

    async def open(self) -> None:
        if self._writer is not None:
            return
        if self.exclusive and not self._holding:
            # Before anything is read or written: another process's tasks are not ours.
            sqlite_lock.hold(self.path)
            self._holding = True
        try:
            await self._open()
        except BaseException:
            self._let_go()
            raise

    async def _open(self) -> None:
        await asyncio.to_thread(self._migrate)
        writer = Writer(
            lambda: _serving_connection(self.path, self.synchronous),
            f"accord-sqlite-writer:{self.path}",
            self.row_cache,
        )
        writer.start()
        await asyncio.to_thread(writer.ready.wait)
        if writer.startup_error is not None:
            raise StoreError(f"cannot open {self.path}: {writer.startup_error}")
        self._writer = writer
        reader = _serving_connection(self.path, self.synchronous)
        reader.execute("PRAGMA query_only = 1")
        reader.execute(f"PRAGMA cache_size = -{self.cache_kib}")
        self._reader = reader

    def _migrate(self) -> None:
        try:
            conn = _connect(self.path, self.synchronous)
        except sqlite3.Error as exc:
            raise StoreError(sqlite_lock.cannot_open(self.path, exc)) from exc
        try:
            migrations.migrate(conn, int(time.time() * 1000), self._extensions)
            self._task_rows = migrations.extension_task_rows(conn)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        finally:
            conn.close()

    async def close(self) -> None:
        for loop in list(self._pending):
            self._hand_over(loop)
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.queue.put(None)  # after every write already queued
            await asyncio.to_thread(writer.join)
            self._closed_stats = CommitStats(writer.commits, writer.writes, writer.replayed)
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()
        self._let_go()

    def _let_go(self) -> None:
        if self._holding:
            self._holding = False
            sqlite_lock.release(self.path)

    async def ping(self) -> None:
        writer = self._writer
        if writer is None or not writer.is_alive():
            raise StoreError("the store is not open (or its writer thread stopped)")
        try:
            self._read().execute("SELECT 1").fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from exc

    async def shared_secret(self, name: str) -> bytes:
        rows = self._rows("SELECT value FROM secrets WHERE name = ?", (name,))
        if rows:
            return bytes(rows[0][0])
        fresh = new_secret()

        def op(conn: sqlite3.Connection) -> bytes:
            # Another process may have made it since: the first one written stays.
            conn.execute("INSERT OR IGNORE INTO secrets VALUES (?, ?)", (name, fresh))
            row = conn.execute("SELECT value FROM secrets WHERE name = ?", (name,)).fetchone()
            return bytes(row[0])

        value: bytes = await self._write(op)
        return value

    @property
    def commit_stats(self) -> CommitStats:
        """Group commit at work, since open (once closed: the totals of that time open)."""
        writer = self._writer
        if writer is None:
            return self._closed_stats
        return CommitStats(writer.commits, writer.writes, writer.replayed)

    @property
    def schema_version(self) -> int:
        return migrations.current_version(self._read())

    # --- plumbing --------------------------------------------------------------------------

    def _read(self) -> sqlite3.Connection:
        if self._reader is None:
            raise StoreError("the store is not open")
        return self._reader

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        # fetchall() runs each statement to its end, so no read transaction stays open.
        return self._read().execute(sql, params).fetchall()

    def _write(
        self, op: Op, append: Append | None = None, *, deletes_tasks: bool = False
    ) -> asyncio.Future[Any]:
        """Queue a write for the writer thread; its future resolves once it is committed."""
        writer = self._writer
        if writer is None:
            raise StoreError("the store is not open")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        pending = self._pending.get(loop)
        if pending is None:
            pending = self._pending[loop] = []
            loop.call_soon(self._hand_over, loop)  # a no-op if handed over early
        pending.append(Write(op, future, append, deletes_tasks))
        if len(pending) >= _HAND_OVER_MAX:  # start the writer early: it works while we go on
            self._hand_over(loop)
        return future

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        writes = self._pending.pop(loop, None)
        if not writes:
            return
        if self._writer is not None:
            self._writer.queue.put(writes)
            return
        for write in writes:  # closed in between: these were never queued
            if not write.future.done():
                write.future.set_exception(StoreError("the store is closed"))

    # --- tasks and their logs --------------------------------------------------------------

    def append(
        self,
        record: TaskRecord,
        events: Sequence[Event],
        expected_seq: int,
        *,
        tenant_task_limit: int | None = None,
        requests: Sequence[RequestKey] = (),
    ) -> asyncio.Future[None]:
        """Queues the append and returns its future (a failure to queue is its exception)."""
        try:
            return self._enqueue_append(record, events, expected_seq, tenant_task_limit, requests)
        except Exception as exc:
            failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            failed.set_exception(exc)
            return failed

    def _enqueue_append(
        self,
        record: TaskRecord,
        events: Sequence[Event],
        expected_seq: int,
        tenant_task_limit: int | None,
        requests: Sequence[RequestKey] = (),
    ) -> asyncio.Future[None]:
        check_append(record, events, expected_seq)
        task = record.task
        snapshot = encode(task)
        append = Append(
            task_id=task.id,
            tenant=record.tenant,
            context_id=task.context_id,
            state=_rows.STATE_NUMBER[record.state],
            created_ms=record.created_ms,
            updated_ms=record.updated_ms,
            seq=record.seq,
            snapshot=snapshot,
            expected=expected_seq,
            # a creation event carries the snapshot itself: encode it once
            events=[
                (task.id, e.seq, e.kind, e.at_ms, snapshot if e.body is task else encode(e.body))
                for e in events
            ],
            status_changed=any(e.kind == "status" for e in events),
            tenant_limit=tenant_task_limit if expected_seq == 0 else None,
            requests=requests,
        )
        return self._write(append.run, append)

    async def get_task(self, task_id: str, tenant: str | None) -> TaskRecord | None:
        row = self._task_row(task_id, tenant)
        return _rows.task_record(row) if row is not None else None

    async def get_snapshot(self, task_id: str, tenant: str) -> bytes | None:
        row = self._task_row(task_id, tenant)
        return row[4] if row is not None else None

    def _task_row(self, task_id: str, tenant: str | None) -> Row | None:
        """The task's row (``_TASK_COLUMNS``) if it exists in ``tenant`` (None: any)."""
        cache = self.row_cache
        if cache is None:
            row = self._read_task_row(task_id)
        else:
            row = cache.get(task_id)
            if row is None:
                epoch = cache.epoch  # before the read: see RowCache.fill
                row = self._read_task_row(task_id)
                if row is not None:
                    cache.fill(task_id, row, epoch)
        # Ids are unique across tenants: a row of another tenant means "not found" to this one.
        if row is None or (tenant is not None and row[0] != tenant):
            return None
        return row

    def _read_task_row(self, task_id: str) -> Row | None:
        rows = self._read().execute(_GET_TASK, (task_id,)).fetchall()
        return rows[0] if rows else None  # type: ignore[no-any-return]

    async def read_events(self, task_id: str, after_seq: int, limit: int = 1000) -> list[Event]:
        cache = self.row_cache
        if cache is not None:
            # The cached row is the task's latest commit (see _row_cache): a log that ends at
            # or before ``after_seq`` has nothing after it. A stream that has shown every
            # event asks this after each wake-up; it need not enter SQLite for the answer.
            row = cache.get(task_id)
            if row is not None and row[1] <= after_seq:
                return []
        rows = self._rows(
            "SELECT seq, kind, at_ms, body FROM events WHERE task_id = ? AND seq > ?"
            " ORDER BY seq LIMIT ?",
            (task_id, after_seq, max(limit, 0)),
        )
        return _rows.events(task_id, rows)

    async def list_tasks(self, query: TaskQuery) -> TaskPage:
        where = ["tenant = ?"]
        params: list[Any] = [query.tenant]
        if query.context_id:
            where.append("context_id = ?")
            params.append(query.context_id)
        if query.status is not None:
            where.append("state = ?")
            params.append(_rows.STATE_NUMBER[query.status])
        if query.updated_after_ms is not None:
            where.append("updated_ms >= ?")
            params.append(query.updated_after_ms)
        conn = self._read()
        total = self._total_size(conn, query, where, params)
        if query.after is not None:
            where.append("(updated_ms, id) < (?, ?)")
            params += (query.after.updated_ms, query.after.task_id)
        rows = conn.execute(
            f"SELECT {_TASK_COLUMNS}, id FROM tasks WHERE {' AND '.join(where)}"
            " ORDER BY updated_ms DESC, id DESC LIMIT ?",
            (*params, query.page_size + 1),
        ).fetchall()
        next_cursor = None
        if len(rows) > query.page_size:
            del rows[query.page_size :]
            next_cursor = Cursor(rows[-1][3], rows[-1][5])
        records = [_rows.task_record(row[:5]) for row in rows]
        return TaskPage(records=records, total_size=total, next_cursor=next_cursor)

    @staticmethod
    def _total_size(
        conn: sqlite3.Connection, query: TaskQuery, where: list[str], params: list[Any]
    ) -> int:
        if query.context_id or query.updated_after_ms is not None:
            # Counted through the filter's index: proportional to the matching tasks.
            sql = f"SELECT COUNT(*) FROM tasks WHERE {' AND '.join(where)}"
            return int(conn.execute(sql, params).fetchall()[0][0])
        if query.status is not None:
            rows = conn.execute(
                "SELECT n FROM task_counts WHERE tenant = ? AND state = ?",
                (query.tenant, _rows.STATE_NUMBER[query.status]),
            ).fetchall()
            return int(rows[0][0]) if rows else 0
        return _tenant_count(conn, query.tenant)

    async def count_tasks(self, tenant: str) -> int:
        return _tenant_count(self._read(), tenant)

    async def tasks_in_states(
        self, states: frozenset[TaskState], limit: int = 1000, after_id: str = ""
    ) -> list[TaskRecord]:
        if not states:
            return []
        numbers = sorted(_rows.STATE_NUMBER[s] for s in states)
        marks = ", ".join("?" * len(numbers))
        # Each (tenant, state) pair that holds tasks is one range of tasks_by_state; the sort
        # by id is over the matching tasks only (recovery looks for the few left running).
        rows = self._rows(
            f"SELECT {_TASK_COLUMNS_OF_T} FROM task_counts c"
            " CROSS JOIN tasks t ON t.tenant = c.tenant AND t.state = c.state"
            f" WHERE c.state IN ({marks}) AND c.n > 0 AND t.id > ? ORDER BY t.id LIMIT ?",
            (*numbers, after_id, max(limit, 0)),
        )
        return [_rows.task_record(row) for row in rows]

    async def delete_terminal_before(self, cutoff_ms: int, limit: int = 1000) -> int:
        marks = ", ".join("?" * len(_rows.TERMINAL_NUMBERS))

        def op(conn: sqlite3.Connection) -> int:
            ids = conn.execute(
                "SELECT t.id FROM task_counts c"
                " CROSS JOIN tasks t ON t.tenant = c.tenant AND t.state = c.state"
                f" WHERE c.state IN ({marks}) AND c.n > 0 AND t.updated_ms < ? LIMIT ?",
                (*_rows.TERMINAL_NUMBERS, cutoff_ms, max(limit, 0)),
            ).fetchall()
            _delete_task_rows(conn, ids, self._task_rows)
            return len(ids)

        deleted: int = await self._write(op, deletes_tasks=True)
        return deleted

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        marks = ", ".join("?" * len(_rows.TERMINAL_NUMBERS))

        def op(conn: sqlite3.Connection) -> list[str]:
            doomed = [
                row
                for task_id in task_ids
                for row in conn.execute(
                    f"SELECT id FROM tasks WHERE id = ? AND tenant = ? AND state IN ({marks})",
                    (task_id, tenant, *_rows.TERMINAL_NUMBERS),
                ).fetchall()
            ]
            _delete_task_rows(conn, doomed, self._task_rows)
            return [str(row[0]) for row in doomed]

        deleted: list[str] = await self._write(op, deletes_tasks=True)
        return deleted

    # --- push-notification configs ---------------------------------------------------------

    async def put_push_config(
        self,
        config: PushConfigRecord,
        deliver_after: int | None = None,
        *,
        max_per_task: int | None = None,
    ) -> None:
        task_id, config_id = config.config.task_id, config.config.id
        params = (
            task_id,
            config_id,
            config.tenant,
            config.created_ms,
            encode(config.config),
        )

        def op(conn: sqlite3.Connection) -> None:
            # The writer is serial: what these reads find holds until the config is written.
            found = conn.execute("SELECT seq FROM tasks WHERE id = ?", (task_id,)).fetchall()
            if not found:
                raise TaskGone(task_id)
            if max_per_task is not None:
                _check_config_limit(conn, task_id, config_id, max_per_task)
            start = found[0][0] if deliver_after is None else deliver_after
            # Replacing keeps the cursor and revives the delivery (see TaskStore).
            conn.execute(
                "INSERT INTO push_configs (task_id, config_id, tenant, created_ms, body,"
                " delivered_seq) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (task_id, config_id)"
                " DO UPDATE SET tenant = excluded.tenant, created_ms = excluded.created_ms,"
                " body = excluded.body, delivery_state = 'active', failures = 0,"
                " last_error = '', next_attempt_ms = 0",
                (*params, start),
            )

        await self._write(op)

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        rows = self._rows(
            "SELECT tenant, created_ms, body FROM push_configs WHERE task_id = ? AND config_id = ?",
            (task_id, config_id),
        )
        return _rows.config_record(rows[0]) if rows else None

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        rows = self._rows(
            "SELECT tenant, created_ms, body FROM push_configs WHERE task_id = ? ORDER BY rowid",
            (task_id,),
        )
        return [_rows.config_record(row) for row in rows]

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "DELETE FROM push_configs WHERE task_id = ? AND config_id = ?",
                (task_id, config_id),
            )
            return cursor.rowcount > 0

        deleted: bool = await self._write(op)
        return deleted

    async def all_push_configs(
        self, limit: int = 1000, after: tuple[str, str] = ("", "")
    ) -> list[PushConfigRecord]:
        rows = self._rows(
            "SELECT tenant, created_ms, body FROM push_configs"
            " WHERE (task_id, config_id) > (?, ?) ORDER BY task_id, config_id LIMIT ?",
            (*after, max(limit, 0)),
        )
        return [_rows.config_record(row) for row in rows]

    # --- push delivery ---------------------------------------------------------------------

    async def claim_push_deliveries(
        self, now_ms: int, lease_ms: int, limit: int = 100, task_id: str | None = None
    ) -> list[PushDelivery]:
        scope = "" if task_id is None else " AND p.task_id = ?"
        params: tuple[Any, ...] = (now_ms,) if task_id is None else (now_ms, task_id)
        until = now_ms + lease_ms
        due = (
            " FROM push_configs p JOIN tasks t ON t.id = p.task_id"
            " WHERE p.delivery_state = 'active' AND p.next_attempt_ms <= ?"
            f" AND p.delivered_seq < t.seq{scope}"
        )
        # Most claims find nothing (an idle poll, a task whose configs are being delivered):
        # a read answers those without a write transaction (and its fsync).
        if not self._rows(f"SELECT 1{due} LIMIT 1", params):
            return []

        def op(conn: sqlite3.Connection) -> list[PushDelivery]:
            # One writer transaction: nothing else claims between the select and the update.
            rows = conn.execute(
                f"SELECT p.rowid, {_DELIVERY_COLUMNS}{due}"
                " ORDER BY p.next_attempt_ms, p.task_id, p.config_id LIMIT ?",
                (*params, limit),
            ).fetchall()
            conn.executemany(
                "UPDATE push_configs SET next_attempt_ms = ? WHERE rowid = ?",
                [(until, row[0]) for row in rows],
            )
            return [_delivery(row[1:], next_attempt_ms=until) for row in rows]

        claimed: list[PushDelivery] = await self._write(op)
        return claimed

    async def update_push_delivery(
        self,
        task_id: str,
        config_id: str,
        *,
        cursor: int,
        state: DeliveryState,
        failures: int,
        last_error: str,
        next_attempt_ms: int,
    ) -> bool:
        params = (cursor, state, failures, last_error, next_attempt_ms, task_id, config_id)

        def op(conn: sqlite3.Connection) -> bool:
            updated = conn.execute(
                "UPDATE push_configs SET delivered_seq = MAX(delivered_seq, ?),"
                " delivery_state = ?, failures = ?, last_error = ?, next_attempt_ms = ?"
                " WHERE task_id = ? AND config_id = ?",
                params,
            )
            return updated.rowcount > 0

        found: bool = await self._write(op)
        return found

    async def get_push_delivery(self, task_id: str, config_id: str) -> PushDelivery | None:
        rows = self._rows(
            f"SELECT {_DELIVERY_COLUMNS} FROM push_configs p"
            " LEFT JOIN tasks t ON t.id = p.task_id WHERE p.task_id = ? AND p.config_id = ?",
            (task_id, config_id),
        )
        return _delivery(rows[0]) if rows else None

    async def list_push_deliveries(
        self, state: DeliveryState, limit: int = 100, after: tuple[str, str] = ("", "")
    ) -> list[PushDelivery]:
        rows = self._rows(
            f"SELECT {_DELIVERY_COLUMNS} FROM push_configs p"
            " LEFT JOIN tasks t ON t.id = p.task_id WHERE p.delivery_state = ?"
            " AND (p.task_id, p.config_id) > (?, ?) ORDER BY p.task_id, p.config_id LIMIT ?",
            (state, *after, limit),
        )
        return [_delivery(row) for row in rows]

    # --- the global feed ---------------------------------------------------------------------

    async def read_feed(self, after: int, tenant: str | None, limit: int = 256) -> list[FeedEntry]:
        columns = "pos, tenant, task_id, from_seq, to_seq, config_id, deleted"
        if tenant is None:
            rows = self._rows(
                f"SELECT {columns} FROM feed WHERE pos > ? ORDER BY pos LIMIT ?", (after, limit)
            )
        else:
            rows = self._rows(
                f"SELECT {columns} FROM feed WHERE pos > ? AND tenant = ? ORDER BY pos LIMIT ?",
                (after, tenant, limit),
            )
        entries: list[FeedEntry] = []
        for pos, owner, task_id, from_seq, to_seq, config_id, deleted in rows:
            if config_id is not None:
                config = None if deleted else await self.get_push_config(task_id, config_id)
                entries.append(FeedEntry(pos, owner, task_id, [], config_id, config))
                continue
            events = await self.read_events(task_id, from_seq, to_seq - from_seq)
            if events:  # empty once retention deleted the task
                entries.append(FeedEntry(pos, owner, task_id, events))
        return entries

    # --- safe retries (RequestLog) -------------------------------------------------------------

    async def find_request(self, tenant: str, caller: str, key: str) -> StoredRequest | None:
        rows = self._rows(
            "SELECT created_ms, fingerprint, task_id, response FROM requests"
            " WHERE tenant = ? AND caller = ? AND key = ?",
            (tenant, caller, key),
        )
        if not rows:
            return None
        created_ms, fingerprint, task_id, response = rows[0]
        return StoredRequest(
            RequestKey(tenant, caller, key, bytes(fingerprint), created_ms), task_id, response
        )

    def put_request(self, request: StoredRequest) -> asyncio.Future[StoredRequest | None]:
        key = request.key

        def put(conn: sqlite3.Connection) -> StoredRequest | None:
            inserted = conn.execute(
                "INSERT INTO requests VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (
                    key.tenant,
                    key.caller,
                    key.key,
                    key.created_ms,
                    key.fingerprint,
                    request.task_id,
                    request.response,
                ),
            ).rowcount
            if inserted:
                return None
            created_ms, fingerprint, task_id, response = conn.execute(
                "SELECT created_ms, fingerprint, task_id, response FROM requests"
                " WHERE tenant = ? AND caller = ? AND key = ?",
                (key.tenant, key.caller, key.key),
            ).fetchone()
            held = RequestKey(key.tenant, key.caller, key.key, bytes(fingerprint), created_ms)
            return StoredRequest(held, task_id, response)

        return self._write(put)

    def delete_requests_before(self, cutoff_ms: int, limit: int = 1000) -> asyncio.Future[int]:
        def delete(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM requests WHERE (tenant, caller, key) IN (SELECT tenant, caller, key"
                " FROM requests WHERE created_ms < ? ORDER BY created_ms LIMIT ?)",
                (cutoff_ms, max(limit, 0)),
            ).rowcount

        return self._write(delete)

    # --- operations: what /metrics reads (StoreGauges) --------------------------------------

    @property
    def commit_metrics(self) -> CommitMetrics | None:
        """The writer's commits (count, writes per commit, duration), while open."""
        writer = self._writer
        return writer.metrics if writer is not None else None

    async def task_state_counts(self) -> list[tuple[str, TaskState, int]]:
        rows = self._rows("SELECT tenant, state, n FROM task_counts WHERE n > 0")
        return [(tenant, _rows.STATE_BY_NUMBER[state], n) for tenant, state, n in rows]

    async def push_backlog(self) -> tuple[int, int, int]:
        # Active configs through the push_due index; each joined to its task by id.
        behind = self._rows(
            "SELECT COUNT(*), COALESCE(SUM(t.seq - p.delivered_seq), 0)"
            " FROM push_configs p JOIN tasks t ON t.id = p.task_id"
            " WHERE p.delivery_state = 'active' AND p.delivered_seq < t.seq"
        )[0]
        failing = self._rows("SELECT COUNT(*) FROM push_configs WHERE delivery_state = 'failing'")[
            0
        ][0]
        return int(behind[0]), int(behind[1]), int(failing)


class _Access:
    """A store extension's way into a SqliteStore
    (:class:`~accord.store._extensions.SqliteAccess`)."""

    dialect: Literal["sqlite"] = "sqlite"

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    def write(self, op: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        return self._store._write(op)

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._store._rows(sql, params)

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        return await self._store.delete_terminal_tasks(tenant, task_ids)


_DELIVERY_COLUMNS = (
    "p.tenant, p.created_ms, p.body, p.delivered_seq, p.delivery_state, p.failures,"
    " p.last_error, p.next_attempt_ms, COALESCE(t.seq, 0)"
)


def _delete_task_rows(
    conn: sqlite3.Connection, ids: Sequence[Sequence[Any]], task_rows: Sequence[TaskRows]
) -> None:
    """Delete tasks (rows of one id each) with their logs, push configs, the extensions' rows
    of them (``task_rows``) and feed entries, on the writer's connection (a write made with
    ``deletes_tasks``: the row cache forgets)."""
    conn.executemany("DELETE FROM events WHERE task_id = ?", ids)
    conn.executemany("DELETE FROM push_configs WHERE task_id = ?", ids)
    for rows in task_rows:
        conn.executemany(f'DELETE FROM "{rows.table}" WHERE "{rows.column}" = ?', ids)
    conn.executemany("DELETE FROM tasks WHERE id = ?", ids)
    # Last: deleting the configs fed rows of their own. AUTOINCREMENT keeps the highest
    # position ever given in sqlite_sequence, so none is given again.
    conn.executemany("DELETE FROM feed WHERE task_id = ?", ids)


def _delivery(row: Sequence[Any], next_attempt_ms: int | None = None) -> PushDelivery:
    tenant, created_ms, body, cursor, state, failures, last_error, next_ms, task_seq = row
    return PushDelivery(
        config=_rows.config_record((tenant, created_ms, body)),
        cursor=cursor,
        state=state,
        failures=failures,
        last_error=last_error,
        next_attempt_ms=next_ms if next_attempt_ms is None else next_attempt_ms,
        task_seq=task_seq,
    )


def _check_config_limit(
    conn: sqlite3.Connection, task_id: str, config_id: str, max_per_task: int
) -> None:
    """Raise LimitExceeded if storing ``config_id`` adds a config to a full task."""
    rows = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(config_id = ?), 0) FROM push_configs WHERE task_id = ?",
        (config_id, task_id),
    ).fetchall()
    held, replacing = rows[0]
    if not replacing and held >= max_per_task:
        raise LimitExceeded("push_configs_per_task", max_per_task, task_id)


def _tenant_count(conn: sqlite3.Connection, tenant: str) -> int:
    """All of a tenant's tasks, from the per-state counters."""
    return tenant_counts(conn, [tenant]).get(tenant, 0)
