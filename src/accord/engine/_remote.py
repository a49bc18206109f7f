"""Remote agents: the executor of ``accord serve --agent remote`` and the claims workers hold.

No agent code runs in this process. A new task is made durable and stays SUBMITTED; a worker
learns of it from the feed (``GET /tasks/events``), claims it (exactly one claim per task at a
time), and drives it with the agent commands over HTTP. The in-process run only holds the
client's turn open: a blocking SendMessage or a stream ends when a worker's move ends the turn
(a terminal or interrupted state), as with an in-process agent.

A claim is a lease. Every agent command on the task renews it; a worker with long work renews
it by claiming again. A claim whose lease runs out while the task is still SUBMITTED or WORKING
means its worker stopped: the task is **failed** (status message says so), never offered again,
so no work is ever done twice. A claim ends by itself when the task's turn ends.

Claims live in a ClaimTable (accord.store._claims): in this process for memory:// and SQLite,
so after a restart WORKING tasks get a claim held by no one (:meth:`Claims.adopt_running`) and
a task whose worker is gone still ends; in the database for PostgreSQL, so every node grants
and reaps the same claims and they survive a node's restart.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from accord.agents import RequestContext
from accord.core import Caller, Outcome, TaskRecord, lifecycle
from accord.core import agent as agent_commands
from accord.engine._live import LiveHandle, as_message
from accord.engine._streams import event_ends_turn
from accord.store import Claim, ClaimTable, LocalClaimTable
from accord.wire import TaskState

if TYPE_CHECKING:
    from accord.engine._engine import Engine

log = logging.getLogger("accord.remote")

LEASE_EXPIRED_MESSAGE = (
    "The remote worker that claimed this task stopped before finishing it (its claim expired)."
)


class RemoteAgent:
    """The executor of remote mode; :meth:`bind` gives it its engine."""

    def __init__(self) -> None:
        self.engine: Engine | None = None

    def bind(self, engine: Engine) -> None:
        self.engine = engine

    async def execute(self, ctx: RequestContext, task: object) -> None:
        engine = self.engine
        assert engine is not None, "RemoteAgent.bind(engine) was not called"
        start_seq = task.run.start.seq if isinstance(task, LiveHandle) else 0
        await engine.commit_created(ctx.task_id)
        await wait_turn_end(engine, ctx.task_id, start_seq)

    async def cancel(self, ctx: RequestContext, task: object) -> None:
        return None  # the run is cancelled with the task; workers see the status in the feed


async def wait_turn_end(engine: Engine, task_id: str, after_seq: int) -> None:
    """Return once an event after ``after_seq`` leaves the task terminal or interrupted."""
    cursor = after_seq
    with engine.bus.subscribe(task_id) as sub:
        while True:
            sub.clear()
            events = await engine.store.read_events(task_id, cursor, 256)
            for event in events:
                cursor = event.seq
                if event.kind == "status" and event_ends_turn(event):
                    return
            if not events:
                await sub.wait()


@dataclass(frozen=True, slots=True)
class ClaimResult:
    outcome: str  # claimed | renewed | held | not-found | task-terminal
    claim: Claim | None = None
    record: TaskRecord | None = None


_REAP_BATCH = 100


class Claims:
    """Who works on which task, with leases; one per engine. The rows live in ``table``
    (accord.store._claims): in this process by default, in the database for PostgreSQL."""

    def __init__(
        self,
        engine: Engine,
        lease_ms: int,
        clock: Callable[[], int],
        table: ClaimTable | None = None,
    ) -> None:
        self.engine = engine
        self.lease_ms = lease_ms
        self.clock = clock
        self.table: ClaimTable = table if table is not None else LocalClaimTable()
        # Marks the rows this process's reaper takes; unique per process, so a reaper that
        # died is never mistaken for a live one.
        self.reaper_id = f"reaper-{uuid.uuid4().hex}"
        self._reaper: asyncio.Task[None] | None = None
        self._adopted = False

    async def start(self) -> None:
        """Run once the engine's store is open: adopt WORKING tasks that have no claim, and
        with a shared table start the reaper, which then looks for expired claims all the
        time (any node's)."""
        await self.adopt_running()
        self._ensure_reaper()

    async def adopt_running(self) -> int:
        """Every WORKING task with no claim (an in-process table lost them all in a restart)
        gets one no worker holds yet, so it fails after one lease unless its worker acts on it
        or claims it again. SUBMITTED tasks are left for workers to claim. Returns how many."""
        if self._adopted:
            return 0
        self._adopted = True
        adopted = 0
        after = ""
        states = frozenset({TaskState.WORKING})
        while batch := await self.engine.store.tasks_in_states(states, 500, after):
            expires = self.clock() + self.lease_ms
            adopted += await self.table.adopt([Claim(r.id, r.tenant, "", expires) for r in batch])
            after = batch[-1].id
        if adopted:
            self._ensure_reaper()
        return adopted

    async def holder(self, task_id: str) -> str | None:
        return await self.table.holder(task_id)

    async def claim(self, task_id: str, caller: Caller, worker: str) -> ClaimResult:
        record = await self.engine.store.get_task(task_id, caller.tenant)
        if record is None:
            return ClaimResult("not-found")
        if lifecycle.is_terminal(record.state):
            await self.table.release(task_id)
            return ClaimResult("task-terminal", record=record)
        holder = f"{caller.identity}/{worker}" if worker else caller.identity
        now = self.clock()
        # A claim held by no one (adopted after a restart) goes to the first worker that asks.
        outcome, claim = await self.table.grant(
            task_id, caller.tenant, holder, now, now + self.lease_ms
        )
        if outcome != "held":
            self._ensure_reaper()
        return ClaimResult(outcome, claim, record)

    async def touched(self, task_id: str, state: TaskState, at_ms: int) -> None:
        """An agent command decided at ``at_ms`` moved or changed the task: renew its claim,
        or end it with the turn. Ending it spares a claim granted after ``at_ms`` (a worker
        that took the task's next turn while this release was on its way). The command is
        durable already, so a failure here is only logged (at worst the claim expires)."""
        try:
            if lifecycle.ends_turn(state):
                await self.table.release(task_id, lease_ends_by=at_ms + self.lease_ms)
            else:
                await self.table.renew(task_id, self.clock() + self.lease_ms)
        except Exception:
            log.exception("renewing the claim of task %s failed", task_id)

    def _ensure_reaper(self) -> None:
        if self.table.empty():
            return
        if self._reaper is None or self._reaper.done():
            self._reaper = self.engine.spawn(self._reap_forever())

    async def _reap_forever(self) -> None:
        interval = max(self.lease_ms / 4000, 0.05)
        # A shared table is never empty to us: other nodes' claims expire there too.
        while not self.table.empty():
            await asyncio.sleep(interval)
            try:
                await self.reap()
            except Exception:
                log.exception("expiring remote claims failed")

    async def reap(self) -> int:
        """Fail the tasks whose claims expired while they were SUBMITTED or WORKING. Each
        expired claim is first taken by this reaper (no other reaper gets it), then its task
        failed, then the claim deleted; if this process dies in between, the claim expires
        again and another reaper does it."""
        failed = 0
        while True:
            now = self.clock()
            taken = await self.table.take_expired(
                now, self.reaper_id, now + self.lease_ms, _REAP_BATCH
            )
            for claim in taken:
                failed += await self._fail_expired(claim)
                await self.table.reaped(claim)
            if len(taken) < _REAP_BATCH:
                return failed

    async def _fail_expired(self, claim: Claim) -> bool:
        status = as_message(LEASE_EXPIRED_MESSAGE, claim.task_id)

        def fail(record: TaskRecord | None, at: int) -> Outcome:
            # Only an active task: one whose turn ended meanwhile, or that another reaper
            # failed already, is left as it is.
            if record is None or record.state not in lifecycle.ACTIVE:
                return Outcome("untouched")
            return agent_commands.move(record, "fail", at, status)

        outcome = await self.engine.agent_command(claim.task_id, claim.tenant, fail)
        if outcome.ok and outcome.events:
            log.warning("task %s failed: its worker's claim expired", claim.task_id)
            return True
        return False
