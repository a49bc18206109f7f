"""Which node runs a task, for PostgreSQL clusters: session advisory locks.

A node holds a lock keyed by the task id for as long as an executor of its own runs the task.
The lock lives in one dedicated connection, so it disappears by itself when the node dies
(PostgreSQL ends the session). Recovery on any node fails a SUBMITTED or WORKING task only if
nobody holds its lock, so starting a node no longer fails the tasks live nodes are running,
and a dead node's tasks are found as soon as other nodes see its lock session gone (or, failing
that, by the next periodic recovery).

Batched: the holds, releases and probes asked while the previous statement is on its way go
out together as one statement (one round trip, whatever their number), and each caller waits
for the statement that carries its request. So ``hold`` still returns only once the lock is
held, and the engine starts a run (and so writes anything of it) only after that.

The session asks the server for TCP keepalives, so when a node's machine dies without closing
its connection the server ends the session (and frees its locks) within about
``keepalive_idle_s + keepalive_interval_s * keepalive_count`` of the last exchange. If the
connection breaks while the node lives, the node reconnects at once and takes its locks back
(a warning says how many); a lock another session still holds then (most often the node's
old session, which the server has not ended yet) is tried again every second while the node
runs the task. A statement unanswered for ``ping_s`` counts as a broken
connection, and an idle connection with locks is checked every ``ping_s``.

The session is named ``accord holds <node id>`` (its ``application_name``): other nodes watch
for it to end (:mod:`accord.store._pg_nodes`) and then recover this node's tasks at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field

import asyncpg

from accord.store._pg_nodes import HOLDS_APPLICATION

log = logging.getLogger("accord.store")

_TAKE, _GIVE, _PROBE = 1, 2, 3
_KEY = "hashtextextended(k.id, 0)"
# One row per task id: TAKE -> taken; GIVE -> was held; PROBE -> held by another session
# (try to take it; if that worked, give it back at once).
_ANSWER = (
    f"CASE k.op WHEN {_TAKE} THEN pg_try_advisory_lock({_KEY})"
    f" WHEN {_GIVE} THEN pg_advisory_unlock({_KEY})"
    f" ELSE CASE WHEN pg_try_advisory_lock({_KEY}) THEN NOT pg_advisory_unlock({_KEY})"
    " ELSE true END END"
)
_APPLY = f"SELECT k.id, {_ANSWER} FROM unnest($1::text[], $2::smallint[]) AS k(id, op)"
# The same for one task id (a quiet node's usual batch): no arrays to build and unpack.
_APPLY_ONE = f"SELECT {_ANSWER} FROM (SELECT $1::text AS id, $2::smallint AS op) AS k"
_RECONNECT_S = 1.0
_RETAKE_AGAIN_S = 0.1  # another node's probe holds a lock for an instant: try once more
# A lock another session holds when this node wants it (another node runs the task too, or
# after a reconnect this node's old session, which the server ends only when its keepalives
# give up) is tried again this often until taken or released.
_RETAKE_EVERY_S = 1.0


@dataclass(eq=False)
class _Batch:
    """What was asked since the previous statement went out."""

    done: asyncio.Future[None]
    wanted: dict[str, bool] = field(default_factory=dict)  # task id -> hold (True) / release
    probes: set[str] = field(default_factory=set)
    taken: dict[str, bool] = field(default_factory=dict)  # answers, once done
    elsewhere: dict[str, bool] = field(default_factory=dict)


class AdvisoryHolds:
    def __init__(
        self,
        dsn: str,
        *,
        node: str = "",
        keepalive_idle_s: int = 10,
        keepalive_interval_s: int = 5,
        keepalive_count: int = 3,
        ping_s: float = 10.0,
    ) -> None:
        self.dsn = dsn
        self.node = node or uuid.uuid4().hex[:16]
        self.dead_peer_s = keepalive_idle_s + keepalive_interval_s * keepalive_count
        # Server-side GUCs, per session: the server probes an idle peer and gives up on it
        # (tcp_user_timeout also bounds data left unacknowledged). Ignored on Unix sockets.
        self._settings = {
            "tcp_keepalives_idle": str(keepalive_idle_s),
            "tcp_keepalives_interval": str(keepalive_interval_s),
            "tcp_keepalives_count": str(keepalive_count),
            "tcp_user_timeout": str(self.dead_peer_s * 1000),
            "application_name": HOLDS_APPLICATION + self.node,
        }
        self.ping_s = ping_s
        self._conn: asyncpg.Connection | None = None
        self._held: set[str] = set()  # what this node holds (and takes back on reconnect)
        self._retaking: set[str] = set()  # what it runs but another session held when asked
        self._watched = False  # keep the session open while nothing is held (keep_open)
        self._retake_at = 0.0  # loop time of the next try for those
        self._next: _Batch | None = None
        self._wake = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None

    # --- what the store calls -------------------------------------------------------------

    async def hold(self, task_id: str) -> bool:
        """Mark the task as run by this node; False if another node holds it already (then
        it is taken once that node lets go, unless released before)."""
        batch = self._batch()
        batch.wanted[task_id] = True
        await asyncio.shield(batch.done)
        return batch.taken.get(task_id, True)  # absent: released again in the same batch

    def keep_open(self) -> None:
        """Open the lock session now and keep it open (reconnected when it breaks) even while
        nothing is held: other nodes watch for its end (:mod:`accord.store._pg_nodes`), and
        a node must be known to them before it runs anything, not only once it does."""
        if self._watched:
            return
        self._watched = True
        if self._worker is None or self._worker.done():
            self._worker = asyncio.ensure_future(self._work())
        self._wake.set()

    @property
    def held_count(self) -> int:
        """Tasks whose lock this node holds now (for metrics)."""
        return len(self._held)

    async def release(self, task_id: str) -> None:
        """Give the task up. Never raises: a lock whose connection failed is gone anyway."""
        batch = self._batch()
        batch.wanted[task_id] = False
        with contextlib.suppress(Exception):
            await asyncio.shield(batch.done)

    async def held_elsewhere(self, task_id: str) -> bool:
        """True while another live node holds the task."""
        batch = self._batch()
        batch.probes.add(task_id)
        await asyncio.shield(batch.done)
        return batch.elsewhere[task_id]

    async def backend_pid(self) -> int:
        """The PostgreSQL server process of the lock session (diagnostics, tests)."""
        await asyncio.shield(self._batch().done)
        assert self._conn is not None
        return self._conn.get_server_pid()

    async def close(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        batch, self._next = self._next, None
        if batch is not None and not batch.done.done():
            batch.done.set_exception(ConnectionError("the task holds were closed"))
        conn, self._conn = self._conn, None
        self._held.clear()
        self._retaking.clear()
        self._watched = False
        self._wake = asyncio.Event()  # the store may be opened again, in another loop
        if conn is not None and not conn.is_closed():
            await conn.close()

    # --- the connection's one worker ------------------------------------------------------

    def _batch(self) -> _Batch:
        if self._next is None:
            done = asyncio.get_running_loop().create_future()
            # Marks an exception as seen when every waiter was cancelled (no warning then).
            done.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._next = _Batch(done)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.ensure_future(self._work())
        self._wake.set()
        return self._next

    async def _work(self) -> None:
        while True:
            try:
                await self._step()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the connection broke between statements (a ping)
                log.warning("task holds: %r; reconnecting", exc)
                self._drop_connection()

    async def _step(self) -> None:
        if self._conn is None or self._conn.is_closed():
            if self._next is None and not self._held and not self._retaking and not self._watched:
                self._wake.clear()
                await self._wake.wait()  # nothing to hold: no connection needed yet
                return
            try:
                await self._connect()
            except Exception as exc:
                self._drop_connection()
                batch, self._next = self._next, None
                if batch is not None:
                    batch.done.set_exception(exc)
                log.warning("task holds: cannot connect (%r); retrying", exc)
                await asyncio.sleep(_RECONNECT_S)
                return
        loop = asyncio.get_running_loop()
        if self._retaking and loop.time() >= self._retake_at:  # due, however busy the queue
            await self._retake()
            return
        if self._next is None:
            self._wake.clear()
            # A timer, not wait_for: this runs whenever the queue empties, and a task per
            # wait would cost more than the statement it waits for.
            wait_s = self._retake_at - loop.time() if self._retaking else self.ping_s
            timer = loop.call_later(wait_s, self._wake.set)
            started = loop.time()
            await self._wake.wait()
            timer.cancel()
            idle = loop.time() - started >= self.ping_s
            # (While locks are retaken, their statement every second checks the connection.)
            if idle and self._next is None and self._held and self._conn is not None:
                await self._conn.fetchval("SELECT 1", timeout=self.ping_s)
            return
        batch, self._next = self._next, None
        try:
            await self._apply(batch)
        except BaseException as exc:
            # Session-level locks ignore rollback: after a failed statement nobody knows
            # which of its locks are held, so the session goes and a new one takes back
            # what this node holds. Not what it was giving up: those locks go with the
            # session, and taking them back would keep them until the node ends.
            self._drop_connection()
            for task_id, want in batch.wanted.items():
                if not want:
                    self._held.discard(task_id)
                    self._retaking.discard(task_id)
            if isinstance(exc, asyncio.CancelledError):
                batch.done.set_exception(ConnectionError("the task holds were closed"))
                raise
            batch.done.set_exception(exc)
            log.warning("task holds: %r; reconnecting", exc)
            return
        batch.done.set_result(None)

    async def _apply(self, batch: _Batch) -> None:
        ids: list[str] = []
        ops: list[int] = []
        for task_id, want in batch.wanted.items():
            if want != (task_id in self._held):
                ids.append(task_id)
                ops.append(_TAKE if want else _GIVE)
        for task_id in batch.probes:
            if task_id not in batch.wanted and task_id not in self._held:
                ids.append(task_id)
                ops.append(_PROBE)
        answers: dict[str, bool] = {}
        if len(ids) == 1:
            assert self._conn is not None
            answers[ids[0]] = await self._conn.fetchval(
                _APPLY_ONE, ids[0], ops[0], timeout=self.ping_s
            )
        elif ids:
            assert self._conn is not None
            answers = {
                row[0]: row[1]
                for row in await self._conn.fetch(_APPLY, ids, ops, timeout=self.ping_s)
            }
        for task_id, want in batch.wanted.items():
            if want:
                taken = answers.get(task_id, True)  # absent: held already
                batch.taken[task_id] = taken
                if taken:
                    self._held.add(task_id)
                    self._retaking.discard(task_id)
                else:
                    self._retry(task_id)
            else:
                self._held.discard(task_id)
                self._retaking.discard(task_id)
        for task_id in batch.probes:
            if task_id in batch.wanted:
                batch.elsewhere[task_id] = batch.wanted[task_id] and not batch.taken[task_id]
            else:
                batch.elsewhere[task_id] = answers.get(task_id, False)  # absent: held here

    async def _connect(self) -> None:
        conn = await asyncpg.connect(self.dsn, server_settings=self._settings)
        conn.add_termination_listener(lambda _conn: self._wake.set())
        self._conn = conn
        if not self._held and not self._retaking:
            return
        # A new session holds nothing: take back what this node still runs.
        wanted = sorted(self._held | self._retaking)
        missing = await self._take(wanted)
        if missing:
            await asyncio.sleep(_RETAKE_AGAIN_S)
            missing = await self._take(missing)
        self._settle_taken(wanted, missing)
        log.warning(
            "task holds: the lock connection was lost; took back %d of %d task locks%s",
            len(wanted) - len(missing),
            len(wanted),
            f" (held by another session now: {', '.join(missing[:10])}; trying again every"
            f" {_RETAKE_EVERY_S:g} s while they run here)"
            if missing
            else "",
        )

    def _retry(self, task_id: str) -> None:
        """Try for the task's lock again shortly (another session holds it now)."""
        if not self._retaking:
            self._retake_at = asyncio.get_running_loop().time() + _RETAKE_EVERY_S
        self._retaking.add(task_id)

    def _settle_taken(self, wanted: list[str], missing: list[str]) -> None:
        """After trying for the locks of ``wanted``: held, or ``missing`` and tried again."""
        refused = set(missing)
        for task_id in wanted:
            if task_id in refused:
                self._held.discard(task_id)
                self._retry(task_id)
            else:
                self._held.add(task_id)
                self._retaking.discard(task_id)

    async def _retake(self) -> None:
        """Try again for the locks another session held when this node wanted them."""
        self._retake_at = asyncio.get_running_loop().time() + _RETAKE_EVERY_S
        wanted = sorted(self._retaking)
        missing = await self._take(wanted)
        self._settle_taken(wanted, missing)
        if len(missing) < len(wanted):
            log.warning(
                "task holds: took %d task locks another session had held",
                len(wanted) - len(missing),
            )

    async def _take(self, task_ids: list[str]) -> list[str]:
        """Take the locks; the task ids whose lock another session holds."""
        assert self._conn is not None
        rows = await self._conn.fetch(
            _APPLY, task_ids, [_TAKE] * len(task_ids), timeout=self.ping_s
        )
        return [row[0] for row in rows if not row[1]]

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            conn.terminate()
