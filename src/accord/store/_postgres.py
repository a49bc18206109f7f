"""PostgreSQL TaskStore (asyncpg): the store for several accord nodes sharing one database.

Every write is a single statement, hence its own transaction and one round trip: an append is
``WITH t AS (INSERT … ON CONFLICT DO NOTHING | UPDATE … WHERE id = $1 AND seq = $2 RETURNING
id) INSERT INTO events SELECT … FROM t, unnest(…)``, so the events land only if the snapshot
moved, and a stale writer changes nothing (SeqConflict). Group commit needs no writer thread
here: concurrent transactions on the pool's connections share WAL flushes in the server.

Within one process, appends to the same task run in the order they were called (the engine
submits an executor's moves without waiting for each one, and relies on that order); appends
to different tasks run concurrently. Across processes, the seq check decides.

``PostgresBus`` (accord.bus._postgres) wakes followers on every node; :meth:`PostgresStore.bus`
makes one whose connections open and close with the store.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from accord.bus._postgres import NODE_PREFIX
from accord.core import Event, PushConfigRecord, RequestKey, TaskRecord
from accord.core.views import Cursor, TaskQuery
from accord.store import _pg_migrations as pg_migrations
from accord.store import _rows
from accord.store._base import (
    DeliveryState,
    DuplicateRequest,
    FeedEntry,
    LimitExceeded,
    PushDelivery,
    SeqConflict,
    StoredRequest,
    StoreError,
    TaskGone,
    TaskPage,
    new_secret,
    register_unavailable,
)
from accord.store._checks import check_append
from accord.store._extensions import Extensions, PostgresAccess, S, StoreExtension, TaskRows
from accord.store._pg_holds import AdvisoryHolds
from accord.store._pg_nodes import READ_LOCK_SESSIONS, NodeWatch
from accord.telemetry import CommitStats
from accord.wire import TaskState, encode

if TYPE_CHECKING:
    from accord.bus._postgres import PostgresBus
    from accord.store._pg_claims import PgClaimTable

_Conn = asyncpg.Connection | PoolConnectionProxy

# asyncpg raises these as they are (most reads do not wrap them in StoreError): the server
# cannot be reached (OSError: refused, reset, timed out) or lost the connection, is shutting
# down or starting up, is out of disk, memory or connections, or is a read-only standby. A
# client is told to try again (accord.engine._errors.unavailable_error).
register_unavailable(
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.InsufficientResourcesError,
    asyncpg.exceptions.ReadOnlySQLTransactionError,
)
_UNFINISHED = frozenset(
    {TaskState.SUBMITTED, TaskState.WORKING, TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED}
)

_TASK_COLUMNS = "t.tenant, t.seq, t.created_ms, t.updated_ms, t.snapshot"
_GET_ANY = f"SELECT {_TASK_COLUMNS} FROM tasks t WHERE t.id = $1"
_GET_SCOPED = f"SELECT {_TASK_COLUMNS} FROM tasks t WHERE t.id = $1 AND t.tenant = $2"

_EVENTS_OF_T = (
    "INSERT INTO events (task_id, seq, kind, at_ms, body)"
    " SELECT t.id, e.seq, e.kind, e.at_ms, e.body FROM t,"
    " unnest($9::integer[], $10::text[], $11::bigint[], $12::bytea[]) AS e(seq, kind, at_ms, body)"
)
_CREATE = (
    "WITH t AS (INSERT INTO tasks"
    " (id, tenant, context_id, state, created_ms, updated_ms, seq, snapshot)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING RETURNING id) "
    + _EVENTS_OF_T
)
_UPDATE = (
    "WITH t AS (UPDATE tasks SET tenant = $2, context_id = $3, state = $4, created_ms = $5,"
    " updated_ms = $6, seq = $7, snapshot = $8 WHERE id = $1 AND seq = $13 RETURNING id) "
    + _EVENTS_OF_T
)

# An append that carries out requests (safe retries) records their keys in the same
# statement, for the task it wrote (none when the seq check failed). A key held already
# breaks requests' primary key: the whole statement is undone (DuplicateRequest).
_REQUESTS_OF_T = (
    ", r AS (INSERT INTO requests (tenant, caller, key, created_ms, fingerprint, task_id)"
    " SELECT $2, q.caller, q.key, q.created_ms, q.fingerprint, t.id FROM t,"
    " unnest({}::text[], {}::text[], {}::bigint[], {}::bytea[])"
    " AS q(caller, key, created_ms, fingerprint) RETURNING 1) "
)


def _with_requests(statement: str, first: int) -> str:
    """``statement`` (a WITH t AS (…) INSERT INTO events …) also recording request keys
    from the parameters numbered ``first`` to ``first + 3``."""
    head, _, tail = statement.partition(") INSERT INTO events")
    marks = [f"${n}" for n in range(first, first + 4)]
    return head + ")" + _REQUESTS_OF_T.format(*marks) + "INSERT INTO events" + tail


_CREATE_KEYED = _with_requests(_CREATE, 13)
_UPDATE_KEYED = _with_requests(_UPDATE, 14)

# Creations of one tenant under a limit take this transaction lock first (see append). The
# seed (1) and the prefix keep the key apart from the task holds' (pg_holds).
_TENANT_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('accord:tenant-limit:' || $1, 1))"

_PUT_CONFIG = (
    "INSERT INTO push_configs AS p (task_id, config_id, tenant, created_ms, body,"
    " cursor, state, failures, last_error, next_attempt_ms)"
    " VALUES ($1, $2, $3, $4, $5,"
    " COALESCE($6::integer, (SELECT seq FROM tasks WHERE id = $1), 0), 'active', 0, '', 0)"
    " ON CONFLICT (task_id, config_id) DO UPDATE SET tenant = excluded.tenant,"
    " created_ms = excluded.created_ms, body = excluded.body, state = 'active',"
    " failures = 0, last_error = '', next_attempt_ms = 0"
)

_CONFIG_COLUMNS = "p.tenant, p.created_ms, p.body"
_DELIVERY_COLUMNS = (
    "p.tenant, p.created_ms, p.body, p.cursor, p.state, p.failures, p.last_error,"
    " p.next_attempt_ms, COALESCE(t.seq, 0)"
)

# Pairs (tenant, state) that hold tasks in one of the states $1: each is one range of
# tasks_by_state, so retention needs no index of its own. Joined LATERAL with a LIMIT, so
# the planner walks the few pairs into the index instead of scanning all tasks.
_STATE_PAIRS = (
    "(SELECT tenant, state FROM task_counts WHERE state = ANY($1::smallint[])"
    " GROUP BY tenant, state HAVING SUM(n) > 0) c"
)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _delivery(row: asyncpg.Record) -> PushDelivery:
    return PushDelivery(
        config=_rows.config_record(row),
        cursor=row[3],
        state=row[4],
        failures=row[5],
        last_error=row[6],
        next_attempt_ms=row[7],
        task_seq=row[8],
    )


def _affected(status: str) -> int:
    """Rows a command reported, from its status tag ("INSERT 0 3", "DELETE 1")."""
    return int(status.rsplit(" ", 1)[-1])


async def _delete_task_rows(conn: _Conn, doomed: list[str], task_rows: Sequence[TaskRows]) -> None:
    """Delete tasks (locked by the caller's transaction) with their logs, push configs, the
    extensions' rows of them (``task_rows``), claims and feed entries."""
    if not doomed:
        return
    await conn.execute("DELETE FROM events WHERE task_id = ANY($1)", doomed)
    await conn.execute("DELETE FROM push_configs WHERE task_id = ANY($1)", doomed)
    for rows in task_rows:
        await conn.execute(f'DELETE FROM "{rows.table}" WHERE "{rows.column}" = ANY($1)', doomed)
    # A claim left on a deleted task (remote mode) would only wait to be reaped.
    await conn.execute("DELETE FROM remote_claims WHERE task_id = ANY($1)", doomed)
    await conn.execute("DELETE FROM tasks WHERE id = ANY($1)", doomed)
    # Last: deleting the configs fed rows of their own. Positions come from transaction ids,
    # not from the rows left, so later ones still grow.
    await conn.execute("DELETE FROM feed WHERE task_id = ANY($1)", doomed)


class PostgresStore:
    """A TaskStore in a PostgreSQL database named by an asyncpg DSN
    (``postgresql://user@host:5432/db``); ``pool_size`` connections at most per process."""

    def __init__(self, dsn: str, *, pool_size: int = 10) -> None:
        if pool_size < 1:
            raise ValueError("pool_size must be at least 1")
        self.dsn = dsn
        self.pool_size = pool_size
        self._pool: asyncpg.Pool | None = None
        # task id -> done-future of the latest append to it in this process (ordering).
        self._tails: dict[str, asyncio.Future[None]] = {}
        self._buses: list[PostgresBus] = []
        # This node, as other nodes see it: its lock session and its bus are named after it.
        self.node = uuid.uuid4().hex[:16]
        self._holds = AdvisoryHolds(dsn, node=self.node)
        self._watch = NodeWatch(self._read_lock_sessions, self.node)
        self.commit_metrics = CommitStats()  # for /metrics: each append is one transaction
        self._extensions = Extensions()
        # Tables of the database's extensions whose rows go with their task (read at open).
        self._task_rows: list[TaskRows] = []

    def extend(self, extension: StoreExtension[S]) -> PostgresAccess:
        """Register a feature's tables (:mod:`accord.store._extensions`), before open()."""
        self._extensions.add(extension, store_open=self._pool is not None)
        return _Access(self)

    def bus(self, *, catch_up_s: float = 5.0) -> PostgresBus:
        """A LISTEN/NOTIFY bus on this database, started by :meth:`open` and closed by
        :meth:`close` (so an Engine, which opens and closes its store, runs it too)."""
        from accord.bus._postgres import PostgresBus

        bus = PostgresBus(self.dsn, catch_up_s=catch_up_s, node=self.node)
        self._buses.append(bus)
        return bus

    async def nodes(self) -> list[tuple[str, str, datetime.datetime]]:
        rows = await self.pool.fetch(
            "SELECT application_name, host(client_addr), backend_start"
            " FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name LIKE $1"
            " ORDER BY backend_start",
            NODE_PREFIX + "%",
        )
        return [
            (name.removeprefix(NODE_PREFIX), address or "local socket", started)
            for name, address, started in rows
        ]

    def claim_table(self) -> PgClaimTable:
        """The table of remote workers' claims, on this database (every node grants and
        reaps the same claims)."""
        from accord.store._pg_claims import PgClaimTable

        return PgClaimTable(lambda: self.pool)

    async def open(self) -> None:
        if self._pool is not None:
            return
        try:
            conn = await asyncpg.connect(self.dsn)
            try:
                await pg_migrations.migrate(conn, _now_ms(), self._extensions)
                self._task_rows = await pg_migrations.extension_task_rows(conn)
                await conn.execute(pg_migrations.FOLD_DEAD_SHARDS)
            finally:
                await conn.close()
            pool = await asyncpg.create_pool(
                self.dsn, min_size=min(2, self.pool_size), max_size=self.pool_size
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StoreError(f"cannot open the PostgreSQL store: {exc}") from exc
        self._pool = pool
        try:
            for bus in self._buses:
                await bus.start()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        await self._holds.close()
        for bus in self._buses:
            await bus.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def shared_secret(self, name: str) -> bytes:
        async with self.pool.acquire() as conn:
            # Nodes opening the database together each offer one; the first one written stays.
            await conn.execute(
                "INSERT INTO secrets VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                name,
                new_secret(),
            )
            value = await conn.fetchval("SELECT value FROM secrets WHERE name = $1", name)
        return bytes(value)

    async def ping(self) -> None:
        try:
            await self.pool.fetchval("SELECT 1")
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StoreError(f"the PostgreSQL store cannot be reached: {exc}") from exc

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise StoreError("the store is not open")
        return self._pool

    # --- which node runs a task (TaskHolds) -------------------------------------------------

    async def hold_task(self, task_id: str) -> bool:
        return await self._holds.hold(task_id)

    async def release_task(self, task_id: str) -> None:
        await self._holds.release(task_id)

    async def task_held_elsewhere(self, task_id: str) -> bool:
        return await self._holds.held_elsewhere(task_id)

    # --- other nodes' deaths (NodeLosses) ----------------------------------------------------

    async def node_lost(self, within_s: float, every_s: float) -> bool:
        self._holds.keep_open()  # a node that watches the others is watched by them
        return bool(await self._watch.wait_gone(within_s, every_s))

    async def _read_lock_sessions(self) -> tuple[datetime.datetime, list[str]]:
        async with asyncio.timeout(5.0):  # (a connection, too, when the pool makes one)
            row = await self.pool.fetchrow(READ_LOCK_SESSIONS)
        assert row is not None
        return row[0], list(row[1])

    # --- tasks and their logs --------------------------------------------------------------

    async def append(
        self,
        record: TaskRecord,
        events: Sequence[Event],
        expected_seq: int,
        *,
        tenant_task_limit: int | None = None,
        requests: Sequence[RequestKey] = (),
    ) -> None:
        check_append(record, events, expected_seq)
        limit = tenant_task_limit if expected_seq == 0 else None
        # Take this task's place in line before the first await: appends keep call order.
        task_id = record.id
        previous = self._tails.get(task_id)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._tails[task_id] = done
        try:
            if previous is not None:
                await asyncio.wait((previous,))
            await self._append(record, events, expected_seq, limit, requests)
        finally:
            done.set_result(None)
            if self._tails.get(task_id) is done:
                del self._tails[task_id]

    async def _append(
        self,
        record: TaskRecord,
        events: Sequence[Event],
        expected: int,
        limit: int | None,
        requests: Sequence[RequestKey] = (),
    ) -> None:
        task = record.task
        snapshot = encode(task)
        args: list[Any] = [
            task.id,
            record.tenant,
            task.context_id,
            _rows.STATE_NUMBER[record.state],
            record.created_ms,
            record.updated_ms,
            record.seq,
            snapshot,
            [e.seq for e in events],
            [e.kind for e in events],
            [e.at_ms for e in events],
            # a creation event carries the snapshot itself: encode it once
            [snapshot if e.body is task else encode(e.body) for e in events],
        ]
        if expected:
            args.append(expected)
        if expected:
            statement = _UPDATE_KEYED if requests else _UPDATE
        else:
            statement = _CREATE_KEYED if requests else _CREATE
        if requests:
            args += [
                [k.caller for k in requests],
                [k.key for k in requests],
                [k.created_ms for k in requests],
                [k.fingerprint for k in requests],
            ]
        started = time.perf_counter()
        try:
            if limit is None:
                status = await self.pool.execute(statement, *args)
            else:
                status = await self._create_limited(record, statement, args, limit)
        except asyncpg.UniqueViolationError as exc:
            if exc.table_name != "requests":
                raise StoreError(f"task {task.id!r}: append failed: {exc}") from exc
            raise await self._duplicate(requests) from None
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            self.commit_metrics.failures += 1
            # A connection lost during the commit leaves the outcome unknown: not a conflict.
            raise StoreError(f"task {task.id!r}: append failed: {exc}") from exc
        self.commit_metrics.committed(1, time.perf_counter() - started)
        if _affected(status) == 0:
            found = await self.pool.fetchval("SELECT seq FROM tasks WHERE id = $1", task.id)
            raise SeqConflict(task.id, expected, found or 0)

    async def _duplicate(self, requests: Sequence[RequestKey]) -> DuplicateRequest:
        """The refusal of an append whose request key another writer recorded first."""
        for key in requests:
            held = await self.find_request(key.tenant, key.caller, key.key)
            if held is not None:
                return DuplicateRequest(key, held.task_id)
        return DuplicateRequest(requests[0], "")  # (forgotten since: the window passed)

    async def _create_limited(
        self, record: TaskRecord, statement: str, args: list[Any], limit: int
    ) -> str:
        """The creation under the tenant's limit: the tenant's transaction lock serialises
        limited creations of one tenant on every node (other tenants are untouched), and the
        count, a later statement, sees every creation committed before the lock was granted."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(_TENANT_LOCK, record.tenant)
            if await _tenant_count(conn, record.tenant) >= limit:
                exists = await conn.fetchval("SELECT seq FROM tasks WHERE id = $1", record.id)
                if exists is None:  # (an existing id is a conflict, reported as one)
                    raise LimitExceeded("tasks_per_tenant", limit, record.id)
            status: str = await conn.execute(statement, *args)
            return status

    async def get_task(self, task_id: str, tenant: str | None) -> TaskRecord | None:
        if tenant is None:
            row = await self.pool.fetchrow(_GET_ANY, task_id)
        else:
            row = await self.pool.fetchrow(_GET_SCOPED, task_id, tenant)
        return _rows.task_record(row) if row is not None else None

    async def get_snapshot(self, task_id: str, tenant: str) -> bytes | None:
        value = await self.pool.fetchval(
            "SELECT snapshot FROM tasks WHERE id = $1 AND tenant = $2", task_id, tenant
        )
        return value  # type: ignore[no-any-return]

    async def read_events(self, task_id: str, after_seq: int, limit: int = 1000) -> list[Event]:
        rows = await self.pool.fetch(
            "SELECT seq, kind, at_ms, body FROM events WHERE task_id = $1 AND seq > $2"
            " ORDER BY seq LIMIT $3",
            task_id,
            after_seq,
            max(limit, 0),
        )
        return _rows.events(task_id, rows)

    async def list_tasks(self, query: TaskQuery) -> TaskPage:
        where = ["t.tenant = $1"]
        params: list[Any] = [query.tenant]

        def param(value: Any) -> str:
            params.append(value)
            return f"${len(params)}"

        if query.context_id:
            where.append(f"t.context_id = {param(query.context_id)}")
        if query.status is not None:
            where.append(f"t.state = {param(_rows.STATE_NUMBER[query.status])}")
        if query.updated_after_ms is not None:
            where.append(f"t.updated_ms >= {param(query.updated_after_ms)}")
        async with self.pool.acquire() as conn:
            total = await self._total_size(conn, query, " AND ".join(where), list(params))
            if query.after is not None:
                after = query.after
                cursor = f"({param(after.updated_ms)}, {param(after.task_id)})"
                where.append(f"(t.updated_ms, t.id) < {cursor}")
            rows = await conn.fetch(
                f"SELECT {_TASK_COLUMNS}, t.id FROM tasks t WHERE {' AND '.join(where)}"
                f" ORDER BY t.updated_ms DESC, t.id DESC LIMIT {param(query.page_size + 1)}",
                *params,
            )
        next_cursor = None
        if len(rows) > query.page_size:
            del rows[query.page_size :]
            next_cursor = Cursor(rows[-1][3], rows[-1][5])
        return TaskPage(
            records=[_rows.task_record(row) for row in rows],
            total_size=total,
            next_cursor=next_cursor,
        )

    @staticmethod
    async def _total_size(conn: _Conn, query: TaskQuery, where: str, params: list[Any]) -> int:
        if query.context_id or query.updated_after_ms is not None:
            # Counted through the filter's index: proportional to the matching tasks.
            return int(await conn.fetchval(f"SELECT COUNT(*) FROM tasks t WHERE {where}", *params))
        if query.status is not None:
            value = await conn.fetchval(
                "SELECT COALESCE(SUM(n), 0) FROM task_counts WHERE tenant = $1 AND state = $2",
                query.tenant,
                _rows.STATE_NUMBER[query.status],
            )
            return int(value)
        return await _tenant_count(conn, query.tenant)

    async def count_tasks(self, tenant: str) -> int:
        async with self.pool.acquire() as conn:
            return await _tenant_count(conn, tenant)

    async def tasks_in_states(
        self, states: frozenset[TaskState], limit: int = 1000, after_id: str = ""
    ) -> list[TaskRecord]:
        if not states:
            return []
        numbers = sorted(_rows.STATE_NUMBER[s] for s in states)
        # Unfinished states only (recovery): the partial index tasks_unfinished, whose
        # predicate the literal list repeats so that the planner may use it.
        unfinished = " AND t.state IN (1, 2, 6, 8)" if states <= _UNFINISHED else ""
        rows = await self.pool.fetch(
            f"SELECT {_TASK_COLUMNS} FROM tasks t WHERE t.state = ANY($1::smallint[])"
            f"{unfinished} AND t.id > $2 ORDER BY t.id LIMIT $3",
            numbers,
            after_id,
            max(limit, 0),
        )
        return [_rows.task_record(row) for row in rows]

    async def delete_terminal_before(self, cutoff_ms: int, limit: int = 1000) -> int:
        async with self.pool.acquire() as conn:
            async with conn.transaction():
                # SKIP LOCKED: nodes sweeping at the same time split the work.
                ids = await conn.fetch(
                    f"SELECT t.id FROM {_STATE_PAIRS}, LATERAL (SELECT id FROM tasks"
                    " WHERE tenant = c.tenant AND state = c.state AND updated_ms < $2"
                    " LIMIT $3 FOR UPDATE SKIP LOCKED) t LIMIT $3",
                    _rows.TERMINAL_NUMBERS,
                    cutoff_ms,
                    max(limit, 0),
                )
                doomed = [row[0] for row in ids]
                await _delete_task_rows(conn, doomed, self._task_rows)
            # Retention runs now and then on every node: a fine moment to tidy the counters.
            await conn.execute(pg_migrations.FOLD_DEAD_SHARDS)
        return len(doomed)

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        async with self.pool.acquire() as conn, conn.transaction():
            # Locked as retention locks them; a task another node deletes meanwhile is skipped.
            rows = await conn.fetch(
                "SELECT id FROM tasks WHERE id = ANY($1) AND tenant = $2 AND state = ANY($3)"
                " FOR UPDATE SKIP LOCKED",
                list(task_ids),
                tenant,
                list(_rows.TERMINAL_NUMBERS),
            )
            doomed = [str(row[0]) for row in rows]
            await _delete_task_rows(conn, doomed, self._task_rows)
        return doomed

    # --- push-notification configs ---------------------------------------------------------

    async def put_push_config(
        self,
        config: PushConfigRecord,
        deliver_after: int | None = None,
        *,
        max_per_task: int | None = None,
    ) -> None:
        task_id, config_id = config.config.task_id, config.config.id
        args = (task_id, config_id, config.tenant, config.created_ms, encode(config.config))
        async with self.pool.acquire() as conn, conn.transaction():
            # A lock on the task's row keeps retention (which deletes a task FOR UPDATE) from
            # deleting it under this config, and finds the task gone if it did first. FOR
            # UPDATE when limited: it also serialises limited puts to one task on every node,
            # so the count, a later statement, sees what the previous holder committed.
            lock = "FOR UPDATE" if max_per_task is not None else "FOR KEY SHARE"
            if await conn.fetchval(f"SELECT 1 FROM tasks WHERE id = $1 {lock}", task_id) is None:
                raise TaskGone(task_id)
            if max_per_task is None:
                await conn.execute(_PUT_CONFIG, *args, deliver_after)
                return
            row = await conn.fetchrow(
                "SELECT COUNT(*), COUNT(*) FILTER (WHERE config_id = $2) FROM push_configs"
                " WHERE task_id = $1",
                task_id,
                config_id,
            )
            assert row is not None  # an aggregate always returns its row
            held, replacing = row[0], row[1]
            if not replacing and held >= max_per_task:
                raise LimitExceeded("push_configs_per_task", max_per_task, task_id)
            await conn.execute(_PUT_CONFIG, *args, deliver_after)

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        row = await self.pool.fetchrow(
            f"SELECT {_CONFIG_COLUMNS} FROM push_configs p"
            " WHERE p.task_id = $1 AND p.config_id = $2",
            task_id,
            config_id,
        )
        return _rows.config_record(row) if row is not None else None

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        rows = await self.pool.fetch(
            f"SELECT {_CONFIG_COLUMNS} FROM push_configs p WHERE p.task_id = $1"
            " ORDER BY p.position",
            task_id,
        )
        return [_rows.config_record(row) for row in rows]

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        status = await self.pool.execute(
            "DELETE FROM push_configs WHERE task_id = $1 AND config_id = $2", task_id, config_id
        )
        return _affected(status) > 0

    async def all_push_configs(
        self, limit: int = 1000, after: tuple[str, str] = ("", "")
    ) -> list[PushConfigRecord]:
        rows = await self.pool.fetch(
            f"SELECT {_CONFIG_COLUMNS} FROM push_configs p"
            " WHERE (p.task_id, p.config_id) > ($1, $2) ORDER BY p.task_id, p.config_id LIMIT $3",
            after[0],
            after[1],
            max(limit, 0),
        )
        return [_rows.config_record(row) for row in rows]

    # --- push delivery (the durable outbox) ------------------------------------------------

    async def claim_push_deliveries(
        self, now_ms: int, lease_ms: int, limit: int = 100, task_id: str | None = None
    ) -> list[PushDelivery]:
        # SKIP LOCKED: a row another node is claiming right now is left to it, not waited for;
        # the lease written here keeps it from every other claimer once committed.
        rows = await self.pool.fetch(
            "WITH due AS ("
            " SELECT p.task_id, p.config_id, p.next_attempt_ms AS was FROM push_configs p"
            " JOIN tasks t ON t.id = p.task_id"
            " WHERE p.state = 'active' AND p.next_attempt_ms <= $1 AND p.cursor < t.seq"
            " AND ($4::text IS NULL OR p.task_id = $4)"
            " ORDER BY p.next_attempt_ms, p.task_id, p.config_id LIMIT $3"
            " FOR UPDATE OF p SKIP LOCKED),"
            " claimed AS (UPDATE push_configs p SET next_attempt_ms = $1 + $2 FROM due"
            " WHERE p.task_id = due.task_id AND p.config_id = due.config_id"
            " RETURNING p.*, due.was)"
            f" SELECT {_DELIVERY_COLUMNS} FROM claimed p JOIN tasks t ON t.id = p.task_id"
            " ORDER BY p.was, p.task_id, p.config_id",
            now_ms,
            lease_ms,
            max(limit, 0),
            task_id,
        )
        return [_delivery(row) for row in rows]

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
        status = await self.pool.execute(
            "UPDATE push_configs SET cursor = GREATEST(cursor, $3), state = $4, failures = $5,"
            " last_error = $6, next_attempt_ms = $7 WHERE task_id = $1 AND config_id = $2",
            task_id,
            config_id,
            cursor,
            state,
            failures,
            last_error,
            next_attempt_ms,
        )
        return _affected(status) > 0

    async def get_push_delivery(self, task_id: str, config_id: str) -> PushDelivery | None:
        row = await self.pool.fetchrow(
            f"SELECT {_DELIVERY_COLUMNS} FROM push_configs p LEFT JOIN tasks t ON t.id = p.task_id"
            " WHERE p.task_id = $1 AND p.config_id = $2",
            task_id,
            config_id,
        )
        return _delivery(row) if row is not None else None

    async def list_push_deliveries(
        self, state: DeliveryState, limit: int = 100, after: tuple[str, str] = ("", "")
    ) -> list[PushDelivery]:
        rows = await self.pool.fetch(
            f"SELECT {_DELIVERY_COLUMNS} FROM push_configs p LEFT JOIN tasks t ON t.id = p.task_id"
            " WHERE p.state = $1 AND (p.task_id, p.config_id) > ($2, $3)"
            " ORDER BY p.task_id, p.config_id LIMIT $4",
            state,
            after[0],
            after[1],
            max(limit, 0),
        )
        return [_delivery(row) for row in rows]

    # --- the global feed -------------------------------------------------------------------

    async def read_feed(self, after: int, tenant: str | None, limit: int = 256) -> list[FeedEntry]:
        async with self.pool.acquire() as conn:
            if tenant is None:
                rows = await conn.fetch(pg_migrations.READ_FEED_ALL, after, max(limit, 0))
            else:
                rows = await conn.fetch(
                    pg_migrations.READ_FEED_OF_TENANT, after, max(limit, 0), tenant
                )
            appends = [row for row in rows if row[5] is None]
            events: dict[tuple[str, int], Event] = {}
            if appends:
                found = await conn.fetch(
                    "SELECT e.task_id, e.seq, e.kind, e.at_ms, e.body"
                    " FROM unnest($1::text[], $2::integer[], $3::integer[]) AS r(task_id, lo, hi)"
                    " JOIN events e ON e.task_id = r.task_id AND e.seq > r.lo AND e.seq <= r.hi",
                    [row[2] for row in appends],
                    [row[3] for row in appends],
                    [row[4] for row in appends],
                )
                for task_id, seq, kind, at_ms, body in found:
                    events[task_id, seq] = Event(
                        task_id=task_id,
                        seq=seq,
                        kind=kind,
                        body=_rows.BODY_DECODERS[kind].decode(body),
                        at_ms=at_ms,
                    )
        entries: list[FeedEntry] = []
        for pos, owner, task_id, from_seq, to_seq, config_id, _deleted, *config in rows:
            if config_id is not None:
                stored = _rows.config_record(config) if config[0] is not None else None
                entries.append(FeedEntry(pos, owner, task_id, [], config_id, stored))
                continue
            logged = [
                events[key]
                for s in range(from_seq + 1, to_seq + 1)
                if (key := (task_id, s)) in events
            ]
            if logged:  # empty once retention deleted the task
                entries.append(FeedEntry(pos, owner, task_id, logged))
        return entries

    # --- safe retries (RequestLog) -------------------------------------------------------------

    async def find_request(self, tenant: str, caller: str, key: str) -> StoredRequest | None:
        row = await self.pool.fetchrow(
            "SELECT created_ms, fingerprint, task_id, response FROM requests"
            " WHERE tenant = $1 AND caller = $2 AND key = $3",
            tenant,
            caller,
            key,
        )
        if row is None:
            return None
        return StoredRequest(RequestKey(tenant, caller, key, row[1], row[0]), row[2], row[3])

    async def put_request(self, request: StoredRequest) -> StoredRequest | None:
        key = request.key
        inserted = await self.pool.fetchval(
            "INSERT INTO requests VALUES ($1, $2, $3, $4, $5, $6, $7)"
            " ON CONFLICT DO NOTHING RETURNING 1",
            key.tenant,
            key.caller,
            key.key,
            key.created_ms,
            key.fingerprint,
            request.task_id,
            request.response,
        )
        if inserted:
            return None
        return await self.find_request(key.tenant, key.caller, key.key)

    async def delete_requests_before(self, cutoff_ms: int, limit: int = 1000) -> int:
        status = await self.pool.execute(
            "DELETE FROM requests WHERE (tenant, caller, key) IN (SELECT tenant, caller, key"
            " FROM requests WHERE created_ms < $1 ORDER BY created_ms LIMIT $2)",
            cutoff_ms,
            max(limit, 0),
        )
        return _affected(status)

    # --- operations: what /metrics reads (StoreGauges) --------------------------------------

    def holds_count(self) -> int:
        """Tasks this node holds a lock for now (TaskHolds)."""
        return self._holds.held_count

    async def task_state_counts(self) -> list[tuple[str, TaskState, int]]:
        rows = await self.pool.fetch(
            "SELECT tenant, state, SUM(n) FROM task_counts GROUP BY tenant, state HAVING SUM(n) > 0"
        )
        return [(row[0], _rows.STATE_BY_NUMBER[row[1]], int(row[2])) for row in rows]

    async def push_backlog(self) -> tuple[int, int, int]:
        row = await self.pool.fetchrow(
            "SELECT COUNT(*) FILTER (WHERE p.state = 'active' AND p.cursor < t.seq),"
            " COALESCE(SUM(t.seq - p.cursor) FILTER (WHERE p.state = 'active'"
            " AND p.cursor < t.seq), 0),"
            " COUNT(*) FILTER (WHERE p.state = 'failing')"
            " FROM push_configs p LEFT JOIN tasks t ON t.id = p.task_id"
            " WHERE p.state IN ('active', 'failing')"
        )
        assert row is not None
        return int(row[0]), int(row[1]), int(row[2])


class _Access:
    """A store extension's way into a PostgresStore
    (:class:`~accord.store._extensions.PostgresAccess`)."""

    dialect: Literal["postgresql"] = "postgresql"

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    @property
    def pool(self) -> asyncpg.Pool:
        return self._store.pool

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        return await self._store.delete_terminal_tasks(tenant, task_ids)


async def _tenant_count(conn: _Conn, tenant: str) -> int:
    """All of a tenant's tasks, from the per-backend counters."""
    value = await conn.fetchval(
        "SELECT COALESCE(SUM(n), 0) FROM task_counts WHERE tenant = $1", tenant
    )
    return int(value)
