"""Remote agents: the executor of ``accord serve --agent remote`` and the claims workers hold.

No agent code runs in this process. A new task is made durable and stays SUBMITTED; a worker
learns of it from the feed (``GET /tasks/events``), claims it (exactly one claim per task at a
time), and drives it with the agent commands over HTTP. The in-process run only holds the
client's turn open: a blocking SendMessage or a stream ends when a worker's move ends the turn
(a terminal or interrupted state), as with an in-process agent.

A claim is a lease. Every agent command on the task renews it; a worker with long work renews
it by claiming again. A claim whose lease runs out while the task is still SUBMITTED or WORKING
means its worker stopped: the task is **failed** (status message says so), never offered again,
so no work is ever done twice. A claim ends by itself when the task's turn ends. Claims live in
memory: after a restart, WORKING tasks get a claim held by no one (:meth:`Claims.adopt_running`)
so a task whose worker is gone still ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from accord.agents.api import RequestContext
from accord.core import agent as agent_commands
from accord.core import lifecycle
from accord.core.caller import Caller
from accord.core.outcome import Outcome
from accord.core.records import TaskRecord
from accord.engine.live import LiveHandle, as_message
from accord.wire.model import Message, TaskState

if TYPE_CHECKING:
    from accord.engine.engine import Engine

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
        start_seq = task._run().start.seq if isinstance(task, LiveHandle) else 0
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
                if event.kind == "status":
                    state = getattr(event.body, "status").state  # noqa: B009
                    if isinstance(state, TaskState) and lifecycle.ends_turn(state):
                        return
            if not events:
                await sub.wait()


@dataclass(slots=True)
class Claim:
    task_id: str
    tenant: str
    holder: str
    expires_ms: int


@dataclass(frozen=True, slots=True)
class ClaimResult:
    outcome: str  # claimed | renewed | held | not-found | task-terminal
    claim: Claim | None = None
    record: TaskRecord | None = None


class Claims:
    """Who works on which task, with leases; one per engine."""

    def __init__(self, engine: Engine, lease_ms: int, clock: Callable[[], int]) -> None:
        self.engine = engine
        self.lease_ms = lease_ms
        self.clock = clock
        self._claims: dict[str, Claim] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._adopted = False

    async def adopt_running(self) -> int:
        """After a restart no claim survives: every WORKING task gets a claim no worker
        holds yet, so it fails after one lease unless its worker acts on it or claims it
        again. SUBMITTED tasks are left for workers to claim. Returns how many."""
        if self._adopted:
            return 0
        self._adopted = True
        adopted = 0
        after = ""
        states = frozenset({TaskState.WORKING})
        while batch := await self.engine.store.tasks_in_states(states, 500, after):
            for record in batch:
                if record.id not in self._claims:
                    expires = self.clock() + self.lease_ms
                    self._claims[record.id] = Claim(record.id, record.tenant, "", expires)
                    adopted += 1
            after = batch[-1].id
        if adopted:
            self._ensure_reaper()
        return adopted

    def holder(self, task_id: str) -> str | None:
        claim = self._claims.get(task_id)
        return claim.holder if claim is not None else None

    async def claim(self, task_id: str, caller: Caller, worker: str) -> ClaimResult:
        record = await self.engine.store.get_task(task_id, caller.tenant)
        if record is None:
            return ClaimResult("not-found")
        if lifecycle.is_terminal(record.state):
            self._claims.pop(task_id, None)
            return ClaimResult("task-terminal", record=record)
        holder = f"{caller.identity}/{worker}" if worker else caller.identity
        now = self.clock()
        current = self._claims.get(task_id)
        # A claim held by no one (adopted after a restart) goes to the first worker that asks.
        if current is not None and current.expires_ms > now and current.holder not in ("", holder):
            return ClaimResult("held", current, record)
        outcome = "renewed" if current is not None and current.holder == holder else "claimed"
        claim = Claim(task_id, caller.tenant, holder, now + self.lease_ms)
        self._claims[task_id] = claim
        self._ensure_reaper()
        return ClaimResult(outcome, claim, record)

    def touched(self, task_id: str, state: TaskState) -> None:
        """An agent command moved or changed the task: renew its claim, or end it with the
        turn."""
        claim = self._claims.get(task_id)
        if claim is None:
            return
        if lifecycle.ends_turn(state):
            del self._claims[task_id]
        else:
            claim.expires_ms = self.clock() + self.lease_ms

    def _ensure_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = self.engine._spawn(self._reap_forever())

    async def _reap_forever(self) -> None:
        interval = max(self.lease_ms / 4000, 0.05)
        while self._claims:
            await asyncio.sleep(interval)
            try:
                await self.reap()
            except Exception:
                log.exception("expiring remote claims failed")

    async def reap(self) -> int:
        """Fail the tasks whose claims expired while they were SUBMITTED or WORKING."""
        now = self.clock()
        expired = [c for c in self._claims.values() if c.expires_ms <= now]
        failed = 0
        for claim in expired:
            if self._claims.get(claim.task_id) is not claim:
                continue
            del self._claims[claim.task_id]
            status = as_message(LEASE_EXPIRED_MESSAGE, claim.task_id)

            def fail(record: TaskRecord | None, at: int, s: Message | None = status) -> Outcome:
                if record is None or record.state not in lifecycle.ACTIVE:
                    return Outcome("untouched")
                return agent_commands.move(record, "fail", at, s)

            outcome = await self.engine.agent_command(claim.task_id, claim.tenant, fail)
            if outcome.ok and outcome.events:
                log.warning("task %s failed: its worker's claim expired", claim.task_id)
                failed += 1
        return failed
