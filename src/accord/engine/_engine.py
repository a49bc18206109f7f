"""The running service: applies core commands through a store and a bus, runs executors, and
lets any number of followers read a task's log.

Every change goes core -> store (durable) -> bus (wake followers). Responses and streams show
only what the store has acknowledged (read back, or kept from the acknowledgement while the
task runs here), so nothing is shown before it is durable. Agent commands of a
running executor are decided against the in-memory latest record and appended without waiting
(the store keeps their order and commits them in groups); everything a client sees still waits
for durability.

This module holds the Engine itself: its life and recovery, deciding commands, running
executors, and the client commands. Beside it: commits (the write path), streams (following
a task's log for clients), push_configs (the config commands), live (a running task's state).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from accord.agents import (
    Access,
    ActsAfterFirstMove,
    AgentError,
    Answered,
    CancelRecord,
    Decision,
    Divert,
    Executor,
    ExecutorFunction,
    Gate,
    Intake,
    Lifespan,
    ReplaysOnSubscribe,
    RequestContext,
    Resumable,
    Screened,
    TurnEndedError,
    Verdict,
    WrongStateError,
)
from accord.bus import LocalBus
from accord.core import Caller, Limits, Outcome, RequestKey, TaskRecord, lifecycle, views
from accord.core import agent as agent_commands
from accord.core import client as client_commands
from accord.core import intake as intake_rules
from accord.engine._commits import Commits
from accord.engine._live import LiveHandle, LiveTask, Run, as_message, durable_record
from accord.engine._outage import Outage
from accord.engine._push_configs import PushConfigs
from accord.engine._retries import First, InFlight, Recorded, Retries
from accord.engine._streams import StreamItem, Streams
from accord.store import (
    DuplicateRequest,
    NodeLosses,
    SeqConflict,
    SharedStore,
    StoreError,
    TaskHolds,
    TaskSnapshots,
    TaskStore,
)
from accord.telemetry import EngineStats
from accord.telemetry import _context as log_context
from accord.wire import (
    UNSET,
    A2AError,
    ErrorKind,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
    encode,
)

log = logging.getLogger("accord.engine")

FAILED_MESSAGE = "The agent failed while working on this task."
RECOVERED_MESSAGE = (
    "accord stopped while this task was running and the agent cannot resume it; "
    "send the request again."
)
MAX_CONFLICT_RETRIES = 8
RUNNING_STATES = frozenset({TaskState.SUBMITTED, TaskState.WORKING})  # what recovery takes
PAGE_TOKEN_SECRET = "page-token"  # the store's shared secret that signs ListTasks page tokens


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


# The periodic recovery sweep takes a task whose lock is free only if it is still free this
# much later: long enough for a live node whose lock connection broke to reconnect and take
# its locks back (pg_holds does that first thing).
_CONFIRM_UNHELD_S = 0.5


def _new_id() -> str:
    """A version 7 UUID's text: a millisecond timestamp, then 74 random bits."""
    h = (time.time_ns() // 1_000_000).to_bytes(6, "big").hex() + os.urandom(10).hex()
    return f"{h[:8]}-{h[8:12]}-7{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


@dataclass(frozen=True, slots=True)
class EngineConfig:
    limits: Limits = field(default_factory=Limits)
    streaming: bool = True
    push_notifications: bool = True
    accept_client_context_ids: bool = True
    input_modes: tuple[str, ...] | None = None  # a hard filter on part media types when set
    resumable: bool = False  # the agent resumes tasks a dead process left running
    retention_ms: int | None = None  # delete terminal tasks older than this; None keeps all
    retention_interval_s: float = 60.0
    # With a store shared by several nodes (TaskHolds): how often to look for tasks whose
    # node died. Single-process stores recover once, at start.
    recovery_interval_s: float = 30.0
    # With a store that notices other nodes' deaths (NodeLosses): how often it looks (one
    # query on PostgreSQL); a dead node's tasks are recovered as soon as it is seen gone,
    # besides the sweeps every recovery_interval_s. 0: only those sweeps.
    liveness_interval_s: float = 0.5
    # False: ignore the store's TaskHolds and act as the only process on the store (recovery
    # once, at start, fails every task left running). Saves the lock round trips; safe only
    # for a single node, since another node would then fail this one's tasks and vice versa.
    task_holds: bool = True
    # Safe retries (accord.engine._retries): how long a request's key is remembered.
    idempotency_window_ms: int = 86_400_000
    retry_by_message_id: bool = True  # False: only an Idempotency-Key makes a retry
    # How long a run whose appends the store fails (a full disk, a lost connection) waits
    # for the store to take them again before it is stopped; its task is then resumed or
    # failed as soon as the store answers (accord.engine._outage). 0: at the first retry
    # that fails.
    store_outage_s: float = 60.0
    # The A2A 1.1 preview: new tasks count generations (Task.generation, on their events).
    generations: bool = False


def _as_executor(agent: Executor | ExecutorFunction) -> tuple[ExecutorFunction, Any]:
    if isinstance(agent, Executor):
        return agent.execute, agent.cancel
    if callable(agent):
        return agent, None
    raise TypeError(f"{agent!r} is neither an async function nor an Executor")


class PushHooks(Protocol):
    """What push delivery (accord.push.PushDispatcher) plugs into the engine."""

    async def check_url(self, url: str, field: str) -> None:
        """Refuse a webhook URL at registration (raises A2AError naming ``field``)."""

    def config_stored(self, task_id: str) -> None:
        """A push config of the task was stored (it may need delivering)."""

    def committed(self, task_id: str) -> None:
        """The task's log grew."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Engine:
    def __init__(
        self,
        store: TaskStore,
        agent: Executor | ExecutorFunction,
        config: EngineConfig | None = None,
        *,
        bus: LocalBus | None = None,
        clock: Callable[[], int] = _now_ms,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        self.store = store
        self.config = config or EngineConfig()
        self.bus = bus or LocalBus()
        self.clock = clock
        self.new_id = new_id
        self._execute, self._cancel = _as_executor(agent)
        # (isinstance against a runtime-checkable Protocol costs microseconds: once, here)
        self._intake: Intake | None = agent if isinstance(agent, Intake) else None
        # (what a cancel records of the task: a harness's references to the sub-tasks it ends)
        self._cancel_record = agent if isinstance(agent, CancelRecord) else None
        # Optional capabilities of an agent object (accord.agents._capabilities): resume runs
        # the tasks a dead process left running instead of their failing; startup/shutdown
        # bracket the engine.
        self._resume: ExecutorFunction | None = (
            agent.resume if isinstance(agent, Resumable) else None
        )
        self._lifespan: Lifespan | None = agent if isinstance(agent, Lifespan) else None
        # (SubscribeToTask replays the log of the agent's tasks that ask for it)
        self._replay = agent.subscribe_replay if isinstance(agent, ReplaysOnSubscribe) else None
        # A message continuing a task is stored with its run's first command (one append, not
        # two in sequence) when the agent acts outside accord only after one is durable, and
        # no other process writes the store: there, nothing can refuse the append once the
        # agent started (on a store several nodes share, another node's write could;
        # docs/harness.md, "One commit a turn").
        self._one_commit = (
            isinstance(agent, ActsAfterFirstMove)
            and agent.acts_after_first_move
            and not isinstance(store, SharedStore)
        )
        self._gates: list[Gate] = []
        self._live: dict[str, LiveTask] = {}
        self._background: set[asyncio.Task[Any]] = set()
        # (isinstance against a runtime-checkable Protocol costs microseconds: once, here)
        self._snapshots = store if isinstance(store, TaskSnapshots) else None
        self._holds: TaskHolds | None = (
            store if self.config.task_holds and isinstance(store, TaskHolds) else None
        )
        self._losses: NodeLosses | None = (
            store
            if self._holds is not None
            and self.config.liveness_interval_s > 0
            and isinstance(store, NodeLosses)
            else None
        )
        self._push: PushHooks | None = None
        self._start_hooks: list[Callable[[], Awaitable[None]]] = []
        self._started = False
        self._commits = Commits(self, self._live)
        # Runs whose appends the store failed: held, and written again once it answers.
        self._outage = self._commits.outage = Outage(
            self._commits, self._recover_task, self.spawn, self.config.store_outage_s
        )
        self._streams = Streams(store, self.bus, self._live)
        self._push_configs = PushConfigs(self)
        self._token_key: bytes | None = None  # signs ListTasks page tokens
        self.stats = EngineStats()  # recovery sweeps, for /metrics
        self.retries = Retries(  # safe retries
            self, self.config.idempotency_window_ms, by_message_id=self.config.retry_by_message_id
        )

    # --- life ------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Between :meth:`start` and :meth:`stop`."""
        return self._started

    async def start(self) -> None:
        await self.store.open()
        self._started = True
        self._outage.active = True
        if self._lifespan is not None:  # before recovery, which may resume its runs
            await self._lifespan.startup()
        if not self.config.resumable:
            await self.recover()
            if self._holds is not None:
                self.spawn(self._recovery_loop(self.config.recovery_interval_s))
        if self.config.retention_ms is not None:
            self.spawn(self._retention_loop(self.config.retention_ms))
        if self.retries.log is not None:
            self.spawn(self.retries.sweep_loop())
        if self._push is not None:
            await self._push.start()
        self.bus.add_remote_listener(self._remote_change)
        for hook in self._start_hooks:
            await hook()

    def add_gate(self, gate: Gate) -> None:
        """Screen every SendMessage with ``gate`` (on every binding, for any agent), before
        the agent's own intake; gates are asked in the order they were added, and the first
        that diverts a message takes it."""
        self._gates.append(gate)

    def on_start(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Await ``hook`` at the end of every :meth:`start`, with the store open (remote
        claims adopt running tasks and start their reaper, which stops with the engine)."""
        self._start_hooks.append(hook)

    async def stop(self) -> None:
        self._started = False
        if self._lifespan is not None:
            await self._lifespan.shutdown()
        for live in list(self._live.values()):
            for run in list(live.runs):
                if run.task is not None:
                    run.task.cancel()
        for task in list(self._background):
            task.cancel()
        self._outage.abandon("the server stopped before the store took this write")
        pending = [r.task for lv in self._live.values() for r in lv.runs if r.task is not None]
        await asyncio.gather(*pending, *self._background, return_exceptions=True)
        if self._push is not None:
            await self._push.stop()
        await self.store.close()

    async def __aenter__(self) -> Engine:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        """Run ``coro`` beside the engine; it is cancelled when the engine stops."""
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def recover(self, *, confirm_s: float = 0.0) -> int:
        """Fail (or give back to the agent's ``resume``) the tasks a dead process left
        SUBMITTED or WORKING. Returns how many.

        With TaskHolds, ``confirm_s`` > 0: a task whose lock is free is taken only if it is
        still free ``confirm_s`` later. A live node whose lock connection broke reconnects and
        takes its locks back at once; the periodic sweep waits that out instead of taking
        the tasks of a node that lives."""
        recovered = 0
        after = ""
        while True:
            batch = await self.store.tasks_in_states(RUNNING_STATES, 500, after)
            if not batch:
                self.stats.sweeps += 1
                self.stats.recovered_tasks += recovered
                return recovered
            orphans = await self._unheld(batch)
            if orphans and confirm_s > 0 and self._holds is not None:
                await asyncio.sleep(confirm_s)
                orphans = await self._unheld(orphans)
            for record in orphans:
                if record.id in self._live:
                    continue  # a message started a run here meanwhile
                recovered += await self._recover_record(record, RECOVERED_MESSAGE, unheld=True)
            after = batch[-1].id

    async def _unheld(self, records: list[TaskRecord]) -> list[TaskRecord]:
        """The tasks no run of this process works on and no live node holds."""
        records = [record for record in records if record.id not in self._live]
        if self._holds is None:
            return records
        # Asked together, the probes go out as one statement (pg_holds batches them).
        elsewhere = await asyncio.gather(
            *(self._holds.task_held_elsewhere(record.id) for record in records)
        )
        return [
            record
            for record, held in zip(records, elsewhere, strict=True)
            if not held and record.id not in self._live
        ]

    async def _recover_record(
        self, record: TaskRecord, why: str, *, restarted: bool = True, unheld: bool = False
    ) -> bool:
        """Resume (the agent's ``resume``) or fail, with ``why``, a SUBMITTED or WORKING task
        no run of this process holds; False when a live node runs it or another got to it
        first. ``unheld``: the caller found no node holding it just now."""
        if (
            not unheld
            and self._holds is not None
            and await self._holds.task_held_elsewhere(record.id)
        ):
            return False  # a live node runs it
        if self._resume is not None:
            return await self._resume_run(record, restarted=restarted)
        status = as_message(why, record.id, record.task.context_id)

        def fail(rec: TaskRecord | None, now: int) -> Outcome:
            return agent_commands.move(rec, "fail", now, status)

        outcome = await self._decide(record.id, None, fail)
        return outcome.ok

    async def _recover_task(self, task_id: str, why: str) -> bool:
        """Recovery of one task whose runs were stopped here (accord.engine._outage): False
        while a run of it still finishes here; raises what the store raises."""
        if task_id in self._live:
            return False
        record = await self.store.get_task(task_id, None)
        if record is None or record.state not in RUNNING_STATES:
            return True  # (finished meanwhile, or never stored)
        if await self._recover_record(record, why, restarted=False):
            log.info("task %s: recovered now that the store answers", task_id)
        return True

    def running(self, task_id: str) -> bool:
        """Whether a run (an agent's turn, a handler) works on the task in this process."""
        live = self._live.get(task_id)
        return live is not None and bool(live.runs)

    async def run_task(self, task_id: str, tenant: str) -> bool:
        """Start the agent's run on a task nobody runs, as recovery would (its ``resume``):
        an agent that opened a task with its first message (TaskHandle.create_task) starts
        working on it. False when there is no such task, it is not SUBMITTED or WORKING, it
        runs already, or the agent cannot resume."""
        if self._resume is None or task_id in self._live:
            return False
        record = await self.store.get_task(task_id, tenant)
        if record is None or record.state not in (TaskState.SUBMITTED, TaskState.WORKING):
            return False
        return await self._resume_run(record, restarted=False)

    async def run_stored(
        self, record: TaskRecord, message: Message, body: ExecutorFunction
    ) -> bool:
        """Run ``body`` on ``message``, stored on the task already, as a diverted message's
        handler runs (beside the task's other runs in this process): what an agent finishes
        of a message a dead process stored and did not handle. False when another node holds
        the task (it runs there, or its recovery gives it back first)."""
        if self._holds is not None and record.id not in self._live:
            if await self._holds.task_held_elsewhere(record.id):
                return False
            if not await self._holds.hold_task(record.id):
                return False
        ctx = RequestContext(
            message=message,
            task_id=record.id,
            context_id=record.task.context_id,
            caller=Caller(identity="accord.recovery", tenant=record.tenant),
            task=record.task,
        )
        live = self._live.get(record.id) or LiveTask(
            record.id, record.tenant, record, durable=record
        )
        self._start_run(live, ctx, record, body)
        return True

    async def _resume_run(self, record: TaskRecord, *, restarted: bool = True) -> bool:
        """Give a task a dead process left running back to the agent (its ``resume``): a run
        as for a message, on the task's newest message, as the task's own tenant."""
        assert self._resume is not None
        if self._holds is not None and not await self._holds.hold_task(record.id):
            return False  # another node took it first
        task = record.task
        users = [m for m in task.history if m.role is not Role.AGENT]
        ctx = RequestContext(
            message=users[-1] if users else task.history[-1],
            task_id=task.id,
            context_id=task.context_id,
            caller=Caller(identity="accord.recovery", tenant=record.tenant),
            task=task,
        )
        live = LiveTask(task.id, record.tenant, record, durable=record)
        self._start_run(live, ctx, record, self._resume)
        if restarted:
            log.info("resuming task %s after a restart", task.id)
        return True

    async def _recovery_loop(self, interval_s: float) -> None:
        while True:
            lost = False
            if self._losses is None:
                await asyncio.sleep(interval_s)
            else:  # (the sweep comes sooner when another node dies: its tasks are no one's)
                lost = await self._losses.node_lost(interval_s, self.config.liveness_interval_s)
            try:
                # A node seen gone is gone for good (its lock session stayed away across two
                # looks); otherwise a free lock may be a live node's, reconnecting.
                await self.recover(confirm_s=0.0 if lost else _CONFIRM_UNHELD_S)
            except Exception:
                log.exception("recovery sweep failed")

    async def _retention_loop(self, age_ms: int) -> None:
        while True:
            try:
                # In batches; on PostgreSQL each node's batch skips the tasks another node's
                # batch holds (SKIP LOCKED), so nodes sweeping at once split the work.
                while deleted := await self.store.delete_terminal_before(
                    self.clock() - age_ms, 500
                ):
                    self.stats.retained_deleted += deleted
                    await asyncio.sleep(0)
            except Exception:
                log.exception("retention sweep failed")
            await asyncio.sleep(self.config.retention_interval_s)

    # --- changes other nodes make -----------------------------------------------------------

    def _remote_change(self, task_id: str | None) -> None:
        """Another node appended to ``task_id`` (None: to anything, e.g. after a reconnect).
        A task running here must learn of it: its record, its waiters, and a cancel."""
        if task_id is None:
            targets = list(self._live.values())
        else:
            live = self._live.get(task_id)
            targets = [live] if live is not None else []
        for live in targets:
            self.spawn(self._refresh(live))

    async def _refresh(self, live: LiveTask) -> None:
        record = await self.store.get_task(live.task_id, None)
        if record is None or (live.durable is not None and record.seq <= live.durable.seq):
            return
        ended = await self._turn_ended_elsewhere(live)
        live.durable = record
        if not live.writing:
            live.record = record  # (in flight, our append will conflict and reload instead)
        self.bus.notify(live.task_id)
        if lifecycle.is_terminal(record.state):
            for run in list(live.runs):
                await self._cancel_run(run)
        elif ended:
            for run in list(live.runs):
                if run.task is not None and not run.ending:
                    run.cut = True
                    run.task.cancel()

    async def _turn_ended_elsewhere(self, live: LiveTask) -> bool:
        """Whether another writer ended the task's turn since what this process last knew
        of it: a status update to a terminal or interrupted state that is not ours. The
        turns running here are then over: a participant completed the task, or parked it,
        from another node."""
        if live.durable is None:
            return False  # not created yet: nobody else can have written to it
        after = live.durable.seq
        while events := await self.store.read_events(live.task_id, after, 256):
            for event in events:
                after = event.seq
                if isinstance(event.body, TaskStatusUpdateEvent):
                    state = event.body.status.state
                    if isinstance(state, TaskState) and lifecycle.ends_turn(state):
                        return True
        return False

    # --- push hooks (kept apart: the engine runs without push delivery too) ----------------

    @property
    def push(self) -> PushHooks | None:
        """The attached push delivery, if any."""
        return self._push

    def attach_push(self, push: PushHooks) -> None:
        """Deliver push notifications with ``push``: it checks webhook URLs at registration,
        hears of stored configs and commits, and starts and stops with the engine."""
        self._push = push
        self.add_commit_listener(push.committed)

    async def check_push_url(self, url: str, field: str) -> None:
        """Refuse a webhook URL the attached push delivery would not call (none: any)."""
        if self._push is not None:
            await self._push.check_url(url, field)

    def push_config_stored(self, task_id: str) -> None:
        """Tell the attached push delivery (if any) that a config of the task was stored."""
        if self._push is not None:
            self._push.config_stored(task_id)

    def add_remote_listener(self, listener: Callable[[str | None], None]) -> None:
        """Call ``listener(task_id)`` when another node appends to a task (None: to any,
        after a reconnect); never on a single-node store."""
        self.bus.add_remote_listener(listener)

    @property
    def recovery_interval_s(self) -> float:
        """How often the engine looks for the tasks of dead nodes (several nodes)."""
        return self.config.recovery_interval_s

    def add_commit_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(task_id)`` after every durable append (push delivery uses it)."""
        self._commits.listeners.append(listener)

    # --- deciding (accord.engine._commits makes each outcome durable) ----------------------

    async def _current(self, task_id: str, tenant: str | None) -> TaskRecord | None:
        live = self._live.get(task_id)
        if live is not None and live.record is not None:
            if tenant is None or live.tenant == tenant:
                return live.record
            return None
        record = await self.store.get_task(task_id, tenant)
        live = self._live.get(task_id)  # it may have started while we read
        if (
            live is not None
            and live.record is not None
            and (record is None or live.record.seq >= record.seq)
        ):
            return live.record if tenant is None or live.tenant == tenant else None
        return record

    async def _decide(
        self,
        task_id: str,
        tenant: str | None,
        decide: Callable[[TaskRecord | None, int], Outcome],
        holds: Callable[[TaskRecord, Outcome], bool] | None = None,
    ) -> Outcome:
        """Decide against the latest record and make the result durable, retrying when
        another writer got there first. ``holds(record, outcome)`` True: the outcome's append
        is held for the first command of the run about to start (:meth:`_holds_message`),
        and not awaited."""
        for _ in range(MAX_CONFLICT_RETRIES):
            record = await self._current(task_id, tenant)
            outcome = decide(record, self.clock())
            if not outcome.ok or not outcome.events:
                return outcome
            if holds is not None and record is not None and holds(record, outcome):
                self._commits.submit(outcome, record.seq, hold=True)
                return outcome
            try:
                # (shielded: the commit is shared with whatever else this loop turn decided;
                # a cancelled caller must not cancel it for the others)
                await asyncio.shield(self._commits.submit(outcome, record.seq if record else 0))
            except SeqConflict:
                continue
            return outcome
        raise A2AError(ErrorKind.INTERNAL, f"task {task_id!r} is too busy; try again")

    async def agent_act(
        self, live: LiveTask, decide: Callable[[TaskRecord | None, int], Outcome]
    ) -> Outcome:
        """An agent command from a running executor: decided now, appended in order."""
        stall = live.stall
        if stall is not None:  # the store failed an earlier append: it is taken first
            await stall.cleared.wait()
        if live.broken is not None:
            raise AgentError(f"task {live.task_id} can no longer be written: {live.broken}")
        now = self.clock()
        if live.pending is not None:
            created = live.pending
            live.pending = None
            outcome = decide(created.record, now)
            if not outcome.ok:
                live.pending = created
                raise _agent_error(outcome)
            outcome = outcome.after(created)
            self._commits.submit(outcome, 0, live.pending_configs)
            return outcome
        if live.record is None:  # (after another writer's append, or a failed one)
            if await self._turn_ended_elsewhere(live):
                raise TurnEndedError(f"another writer ended the turn on task {live.task_id}")
            live.record = await self.store.get_task(live.task_id, None)
        outcome = decide(live.record, now)
        if not outcome.ok:
            raise _agent_error(outcome)
        assert live.record is not None
        self._commits.submit(outcome, live.record.seq)
        return outcome

    async def apply_in_run(self, live: LiveTask, decide: Decision) -> Outcome:
        """TaskHandle.decide: a decision of a running executor, durable on return and decided
        again when another writer got there first."""
        if live.pending is not None:  # a new task: its creation is stored first
            await self.commit_created(live.task_id)
        outcome = await self._decide(live.task_id, None, decide)
        if not outcome.ok:
            raise _agent_error(outcome)
        return outcome

    async def open_task(
        self,
        tenant: str,
        context_id: str,
        *,
        metadata: dict[str, Any] | None = None,
        message: Message | None = None,
        then: Decision | None = None,
        task_id: str | None = None,
    ) -> TaskRecord:
        """TaskHandle.create_task: a task an agent opens in ``tenant`` (named ``task_id``, or
        a new id), with ``then``'s first moves decided on it, in one append (durable on
        return). No executor runs on it. The tenant's task limit applies, and a task of that
        id must not exist (AgentError)."""
        limit = self.config.limits.tasks_per_tenant
        if limit is not None and await self.store.count_tasks(tenant) >= limit:
            raise AgentError(f"the tenant already holds {limit} tasks")
        now = self.clock()
        outcome = agent_commands.open_task(
            task_id or self.new_id(),
            context_id,
            tenant,
            now,
            metadata,
            message,
            generations=self.config.generations,
        )
        if then is not None:
            following = then(outcome.record, now)
            if not following.ok:
                raise _agent_error(following)
            outcome = following.after(outcome)
        try:
            await asyncio.shield(self._commits.submit(outcome, 0))
        except SeqConflict:  # (only a named task can meet one: a new id is new)
            raise AgentError(f"a task {task_id!r} exists already") from None
        except StoreError as exc:
            raise AgentError(f"the task could not be created: {exc}") from None
        assert outcome.record is not None
        return outcome.record

    async def read_task(self, task_id: str, tenant: str) -> TaskRecord | None:
        """TaskHandle.get_task: another task of ``tenant`` as it stands (None: none)."""
        return await self._current(task_id, tenant)

    def agent_reply(self, live: LiveTask, run: Run, reply: Message) -> None:
        if run.ctx.task is not None or live.pending is None:
            raise AgentError(
                "reply() answers a new message without a task; this task exists already, "
                "so send the text as a status message (e.g. complete(message))"
            )
        if run.reply is not None:
            raise AgentError("reply() may be called once")
        run.reply = reply
        self.retries.replied(run, reply)
        self.bus.notify(live.task_id)

    # --- running executors -------------------------------------------------------------------

    def _start_run(
        self,
        live: LiveTask,
        ctx: RequestContext,
        start: TaskRecord,
        body: ExecutorFunction | None = None,
    ) -> Run:
        """Run the agent (or ``body``, a diverted message's handler) on ``ctx``."""
        handle = LiveHandle(self, live, ctx)
        run = Run(ctx=ctx, handle=handle, start=start)
        handle.bind(run)
        live.runs.add(run)
        self._live[live.task_id] = live
        run.task = asyncio.ensure_future(self._run(live, run, body or self._execute))
        return run

    async def _run(self, live: LiveTask, run: Run, body: ExecutorFunction) -> None:
        log_context.note_task(live.task_id)  # (the run's JSON log lines name its task)
        try:
            await body(run.ctx, run.handle)
        except asyncio.CancelledError:
            pass  # CancelTask or shutdown; the task's state was decided by whoever cancelled
        except (WrongStateError, TurnEndedError) as exc:
            log.info("agent stopped on task %s: %s", live.task_id, exc)
        except Exception:
            log.exception("agent failed on task %s", live.task_id)
            await self._fail_after_error(live)
        finally:
            self._finish_run(live, run)

    async def _fail_after_error(self, live: LiveTask) -> None:
        status = as_message(FAILED_MESSAGE, live.task_id)
        with contextlib.suppress(AgentError, A2AError):  # already terminal: nothing to fail
            await self.agent_act(
                live, lambda rec, now: agent_commands.move(rec, "fail", now, status)
            )

    def _finish_run(self, live: LiveTask, run: Run) -> None:
        """The agent is done. The run finishes once what it emitted is durable; its asyncio
        task does not wait for that (a wake-up per run saved): the commit's completion
        finishes it, whatever that commit's outcome."""
        run.ending = True  # from here on the run is not cancelled (see Commits.stop_runs)
        if live.pending is not None and run.reply is None:
            # The agent ended without answering: the client still gets its task.
            created = live.pending
            live.pending = None
            self._commits.submit(created, 0, live.pending_configs)
        self._commits.release(live)  # a message held for a command that never came
        commit = live.last_commit
        if commit is None or commit.done():
            self._run_finished(live, run)
        else:
            commit.add_done_callback(lambda _: self._run_finished(live, run))

    def _run_finished(self, live: LiveTask, run: Run) -> None:
        run.finished = True  # only now: everything the run emitted is durable
        self.retries.finished(run)
        live.runs.discard(run)
        if not live.runs and self._live.get(live.task_id) is live:
            del self._live[live.task_id]
            # (Once the engine stops, closing the store lets go of every hold.)
            if self._holds is not None and self._started:
                self.spawn(self._holds.release_task(live.task_id))
        self.bus.notify(live.task_id)

    # --- client commands ---------------------------------------------------------------------

    async def _screen(
        self, request: SendMessageRequest, caller: Caller
    ) -> list[Screened] | Message:
        """The gates' look-ups of one message, once (their judgements are part of every
        decision of it); or the direct answer of a gate that took the message as its own
        (nothing more happens to it: no task, nothing stored)."""
        screens: list[Screened] = []
        for gate in self._gates:
            screened = await gate.screen(request, caller)
            if isinstance(screened, Answered):
                return screened.message
            if screened is not None:
                screens.append(screened)
        return screens

    async def _begin(
        self,
        request: SendMessageRequest,
        caller: Caller,
        screens: list[Screened],
        key: RequestKey | None = None,
    ) -> tuple[LiveTask, Run]:
        """Decide a SendMessage and start the agent on it. ``screens``: the gates'
        judgements of it; ``key``: the request's, stored with its message (safe retries)."""
        message = request.message
        tenant = caller.tenant
        limits = self.config.limits
        task_count = (
            await self.store.count_tasks(tenant) if limits.tasks_per_tenant is not None else 0
        )
        new_task_id, new_context_id = self.new_id(), self.new_id()

        verdicts: list[Verdict | None] = [None]
        judges = [screened.judge for screened in screens]
        agent_intake = self._intake
        intake = (
            (lambda task: agent_intake.intake(request, task, caller))
            if agent_intake is not None
            else None
        )

        def decide(record: TaskRecord | None, now: int) -> Outcome:
            admission = intake_rules.admit(
                request,
                record,
                judges=judges,
                intake=intake,
                tenant=tenant,
                tenant_task_count=task_count,
                now_ms=now,
                new_task_id=new_task_id,
                new_context_id=new_context_id,
                limits=limits,
                accept_client_context_ids=self.config.accept_client_context_ids,
                input_modes=self.config.input_modes,
                generations=self.config.generations,
            )
            verdicts[0] = admission.verdict
            outcome = admission.outcome
            if key is not None and outcome.ok:
                outcome = outcome.carrying([key])
            return outcome

        extensions: list[str] = []
        metadata = request.metadata if request.metadata is not UNSET else {}
        inline = await self._push_configs.requested_inline(request)
        if message.task_id:
            await self._interrupt_if_diverted(request, caller)
            holds = None
            if self._one_commit and inline is None and all(s.admitted is None for s in screens):
                holds = self._holds_message(tenant, verdicts)
            outcome = await self._decide(message.task_id, tenant, decide, holds)
            if outcome.error is not None:
                raise outcome.error
            record = outcome.record
            assert record is not None
            if inline is not None:
                await self._push_configs.add_inline(record, inline, tenant)
            live = self._live.get(record.id) or LiveTask(record.id, tenant, record, durable=record)
            task: Task | None = record.task
        else:
            outcome = decide(None, self.clock())
            if outcome.error is not None:
                raise outcome.error
            record = outcome.record
            assert record is not None
            live = LiveTask(record.id, tenant, None, pending=outcome)
            if inline is not None:
                live.pending_configs.append(self._push_configs.inline(record, inline, tenant, []))
            task = None  # a new task: the agent sees only the message
        ctx = RequestContext(
            message=record.task.history[-1],
            task_id=record.id,
            context_id=record.task.context_id,
            caller=caller,
            task=task,
            extensions=extensions,
            metadata=metadata,
        )
        # Tell other nodes this one runs the task before anything of the run is written, so
        # their recovery never mistakes it for a dead node's. (False: another node runs it
        # too; the store takes the hold once that node lets go.)
        if self._holds is not None and record.id not in self._live:
            await self._holds.hold_task(record.id)
        for screened in screens:
            if screened.admitted is not None:
                try:
                    await screened.admitted(record.id)
                except Exception:  # the message is taken; a gate's note of it cannot undo that
                    log.exception("a gate failed to note message admitted on task %s", record.id)
        verdict = verdicts[0]
        if isinstance(verdict, Divert):
            return live, self._start_run(live, ctx, record, verdict.handler)
        return live, self._start_run(live, ctx, record)

    def _holds_message(
        self, tenant: str, verdicts: list[Verdict | None]
    ) -> Callable[[TaskRecord, Outcome], bool]:
        """Whether a message continuing a task waits for its run's first command, to be
        stored with it: yes when no run of this process works on the task and the agent
        runs it (a diverted message's handler may act outside accord first). Then the task
        is live from here (nothing is awaited before its run starts), its durable record
        the one the message was decided on."""

        def holds(record: TaskRecord, outcome: Outcome) -> bool:
            if isinstance(verdicts[0], Divert):
                return False
            assert outcome.record is not None
            live = self._live.get(record.id)
            if live is None:
                live = self._live[record.id] = LiveTask(record.id, tenant, None, durable=record)
            elif (
                live.writing
                or live.durable is not record
                or not all(run.ending for run in live.runs)
            ):
                return False
            # (else: the live task of runs that ended, all of it durable, not let go yet)
            live.message_seq = outcome.record.seq
            return True

        return holds

    async def _interrupt_if_diverted(self, request: SendMessageRequest, caller: Caller) -> None:
        """Before a message that interrupts is stored, cut the turns running on its task in
        this process and wait until they stopped, so that none of them acts on the message
        (or after it). Other nodes' turns stop at their next move, once the interrupting
        message's handler has moved the task under them (see :meth:`_refresh`)."""
        live = self._live.get(request.message.task_id)
        if self._intake is None or live is None or live.tenant != caller.tenant:
            return
        record = await self._current(live.task_id, caller.tenant)
        if record is None:
            return
        try:
            verdict = self._intake.intake(request, record.task, caller)
        except A2AError:
            return  # refused: decided (and answered) when the message is
        if not isinstance(verdict, Divert) or not verdict.interrupt:
            return
        runs = [run for run in live.runs if run.task is not None and not run.ending]
        for run in runs:
            assert run.task is not None
            run.cut = True
            run.task.cancel()
        await asyncio.gather(*(run.task for run in runs if run.task), return_exceptions=True)

    async def send_message(
        self,
        request: SendMessageRequest,
        caller: Caller,
        extensions: list[str] | None = None,
        idempotency_key: str = "",
    ) -> Task | Message:
        """SendMessage: the task once it is terminal or interrupted (or right away with
        ``returnImmediately``), or the agent's direct reply. Items of the streaming
        variants are None when ``heartbeat`` seconds pass idle (for keep-alives).

        A retry (the same caller's messageId, or ``idempotency_key``, seen before) gets the
        first request's answer and runs nothing (accord.engine._retries)."""
        history_length = self._history_length(request)
        immediate = request.configuration is not UNSET and request.configuration.return_immediately
        retries = self.retries
        key, first = await retries.check(request, caller, idempotency_key)
        if first is not None:
            return await self._retried(first, request, caller, history_length, immediate)
        screens = await self._screen(request, caller)
        if isinstance(screens, Message):
            return screens
        try:
            live, run = await self._begin(request, caller, screens, key)
        except DuplicateRequest as duplicate:  # another node stored the same message first
            first = Recorded(duplicate.task_id)
            return await self._retried(first, request, caller, history_length, immediate)
        if extensions:
            run.ctx.extensions.extend(extensions)
        if key is None:
            return await self._answer_turn(live, run, caller.tenant, history_length, immediate)
        retries.running(key, live, run)
        try:
            return await self._answer_turn(live, run, caller.tenant, history_length, immediate)
        except A2AError:
            lost = retries.lost_to(live)  # its creation refused: the first one's task
            if lost is None:
                raise
            return await self._retried(lost, request, caller, history_length, immediate)

    async def _retried(
        self,
        first: First,
        request: SendMessageRequest,
        caller: Caller,
        history_length: int | None,
        immediate: bool,
    ) -> Task | Message:
        """What a blocking SendMessage retry returns: what the first one returned, followed
        here while it still runs in this process."""
        self.retries.note("SendMessage")
        if isinstance(first, InFlight):
            return await self._answer_turn(
                first.live, first.run, caller.tenant, history_length, immediate
            )
        return await self.retries.answer(first, request, caller, history_length, immediate)

    def _retried_stream(
        self,
        first: First,
        request: SendMessageRequest,
        caller: Caller,
        history_length: int | None,
        heartbeat: float | None,
    ) -> AsyncIterator[StreamItem | None]:
        """What a SendStreamingMessage retry streams: the first one's turn."""
        self.retries.note("SendStreamingMessage")
        if isinstance(first, InFlight):
            return self._streams.turn(
                first.live, first.run, caller.tenant, history_length, heartbeat
            )
        return self.retries.stream(first, request, caller, history_length, heartbeat)

    async def _answer_turn(
        self,
        live: LiveTask,
        run: Run,
        tenant: str,
        history_length: int | None,
        immediate: bool,
    ) -> Task | Message:
        """What a blocking SendMessage returns for ``run``: its reply, or the task once the
        turn ended (right away with ``immediate``)."""
        with self.bus.subscribe(live.task_id) as sub:
            while True:
                sub.clear()
                if run.reply is not None:
                    return run.reply
                if immediate and (live.pending is not None or live.held):
                    with contextlib.suppress(StoreError):  # live.broken says why, below
                        await self.commit_created(live.task_id)
                    continue
                if run.cut and run.finished:
                    # (its live record stopped following the task with it: the store knows)
                    record = await self.store.get_task(live.task_id, tenant)
                else:
                    record = await durable_record(self.store, live, run, tenant)
                if (
                    record is not None
                    and record.seq >= run.start.seq
                    and (
                        immediate
                        or (run.finished and not run.cut)
                        or await self._turn_ended(live, run, record)
                    )
                ):
                    return views.present(record.task, history_length)
                await sub.wait()

    async def _turn_ended(self, live: LiveTask, run: Run, record: TaskRecord) -> bool:
        """Whether ``record`` (durable, not older than the turn's start) shows ``run``'s turn
        ended: terminal or interrupted by a status after the turn began."""
        if record.seq == run.start.seq or not lifecycle.ends_turn(record.state):
            return False
        if not lifecycle.ends_turn(run.start.state):
            return True  # a new task: it reached that state in this turn
        # A continuation began interrupted, so the state alone tells nothing (the agent may
        # have added an artifact without moving the task yet): the log has the answer.
        return await self._streams.turn_ended(live, run)

    async def send_streaming_message(
        self,
        request: SendMessageRequest,
        caller: Caller,
        extensions: list[str] | None = None,
        heartbeat: float | None = None,
        idempotency_key: str = "",
    ) -> AsyncIterator[StreamItem | None]:
        """SendStreamingMessage: decided before the first item (errors raise here), then the
        task and its updates until the turn ends, or one direct message. A retry follows
        the first request's turn (accord.engine._retries)."""
        if not self.config.streaming:
            raise A2AError(ErrorKind.UNSUPPORTED_OPERATION, "this agent does not stream")
        history_length = self._history_length(request)
        retries = self.retries  # a retry follows the first request's turn
        key, first = await retries.check(request, caller, idempotency_key)
        if first is not None:
            return self._retried_stream(first, request, caller, history_length, heartbeat)
        screens = await self._screen(request, caller)
        if isinstance(screens, Message):
            return _one_message(screens)
        try:
            live, run = await self._begin(request, caller, screens, key)
        except DuplicateRequest as duplicate:  # another node stored the same message first
            first = Recorded(duplicate.task_id)
            return self._retried_stream(first, request, caller, history_length, heartbeat)
        if extensions:
            run.ctx.extensions.extend(extensions)
        turn = self._streams.turn(live, run, caller.tenant, history_length, heartbeat)
        if key is None:
            return turn
        retries.running(key, live, run)
        return retries.guarded(turn, live, request, caller, history_length, heartbeat)

    async def subscribe(
        self,
        task_id: str,
        caller: Caller,
        after_seq: int | None = None,
        heartbeat: float | None = None,
    ) -> AsyncIterator[StreamItem | None]:
        """SubscribeToTask: decided here (errors raise), then the current task (and, for an
        agent that asks for it, its log replayed: ReplaysOnSubscribe) and every update until
        the task is terminal. With ``after_seq`` (SSE Last-Event-ID) the stream resumes after
        that event instead of starting with the task."""
        await self._guard("subscribe", task_id, caller)
        return await self._streams.subscribe(
            task_id,
            caller,
            after_seq,
            heartbeat,
            streaming=self.config.streaming,
            replay=self._replay,
        )

    async def get_task(
        self, task_id: str, caller: Caller, history_length: int | None = None
    ) -> Task:
        record = await self.store.get_task(task_id, caller.tenant)
        outcome = client_commands.get_task(record, tenant=caller.tenant, task_id=task_id)
        if outcome.error is not None:
            raise outcome.error
        assert record is not None
        if self._intake is not None:
            self._intake.access("read", record.task, caller)
        return views.present(record.task, history_length)

    async def get_task_json(self, task_id: str, caller: Caller) -> bytes:
        """GetTask without historyLength as ProtoJSON bytes: the stored snapshot as it is when
        the store keeps it that way (what ``encode(get_task(…))`` gives, without decoding and
        re-encoding the task)."""
        if self._snapshots is None or self._intake is not None:
            return encode(await self.get_task(task_id, caller))
        snapshot = await self._snapshots.get_snapshot(task_id, caller.tenant)
        if snapshot is None:
            outcome = client_commands.get_task(None, tenant=caller.tenant, task_id=task_id)
            assert outcome.error is not None
            raise outcome.error
        return snapshot

    async def list_tasks(self, request: ListTasksRequest, caller: Caller) -> ListTasksResponse:
        key = await self._page_token_key()
        query = views.list_query(request, caller.tenant, key)
        page = await self.store.list_tasks(query)
        records = page.records
        total_size = page.total_size
        if self._intake is not None:
            # Only the tasks the agent lets the caller see; the count of the others is not
            # told either (totalSize then counts this page's tasks).
            records = [r for r in records if self.allows("read", r.task, caller)]
            total_size = len(records)
        return ListTasksResponse(
            tasks=[
                views.present(r.task, query.history_length, query.include_artifacts)
                for r in records
            ],
            next_page_token=page.next_cursor.token(key) if page.next_cursor else "",
            page_size=query.page_size,
            total_size=total_size,
        )

    async def _page_token_key(self) -> bytes:
        # Read once: the store keeps it for good (every node of a cluster reads the same).
        if self._token_key is None:
            self._token_key = await self.store.shared_secret(PAGE_TOKEN_SECRET)
        return self._token_key

    async def _guard(self, operation: Access, task_id: str, caller: Caller) -> None:
        """The agent's access check on an existing task of the caller's tenant (the
        operation itself refuses unknown and other tenants' tasks)."""
        if self._intake is None:
            return
        record = await self._current(task_id, caller.tenant)
        if record is not None:
            self._intake.access(operation, record.task, caller)

    @property
    def checks_access(self) -> bool:
        """Whether the agent checks who may see its tasks (the harness's membership)."""
        return self._intake is not None

    def allows(self, operation: Access, task: Task, caller: Caller) -> bool:
        """Whether the agent lets ``caller`` make ``operation`` on ``task`` (of its tenant):
        what every read outside the A2A operations (views, the dashboard) asks too."""
        if self._intake is None:
            return True
        try:
            self._intake.access(operation, task, caller)
        except A2AError:
            return False
        return True

    async def cancel_task(self, task_id: str, caller: Caller, *, guard: bool = True) -> Task:
        """CancelTask. ``guard=False`` skips the agent's access check: a cancel the server
        decides itself (a contract that ended), not a client's request."""
        if guard:
            await self._guard("cancel", task_id, caller)
        final = self._cancel_record.canceled_metadata if self._cancel_record else None
        outcome = await self._decide(
            task_id,
            caller.tenant,
            lambda record, now: client_commands.cancel_task(
                record, tenant=caller.tenant, task_id=task_id, now_ms=now, final_metadata=final
            ),
        )
        if outcome.error is not None:
            raise outcome.error
        live = self._live.get(task_id)
        if live is not None:
            for run in list(live.runs):
                await self._cancel_run(run)
        assert outcome.record is not None
        return outcome.record.task

    async def _cancel_run(self, run: Run) -> None:
        if self._cancel is not None:
            try:
                result = self._cancel(run.ctx, run.handle)
                if inspect.isawaitable(result):
                    await result
            except (AgentError, A2AError):
                pass  # the task is canceled already; the agent's own moves are refused
            except Exception:
                log.exception("agent cancel hook failed on task %s", run.ctx.task_id)
        if run.task is not None and not run.task.done():
            run.task.cancel()

    # --- push-notification configs (accord.engine._push_configs) ---------------------------

    async def create_push_config(
        self, config: TaskPushNotificationConfig, caller: Caller
    ) -> TaskPushNotificationConfig:
        await self._guard("push-config", config.task_id, caller)
        return await self._push_configs.create(config, caller)

    async def get_push_config(
        self, task_id: str, config_id: str, caller: Caller
    ) -> TaskPushNotificationConfig:
        await self._guard("push-config", task_id, caller)
        return await self._push_configs.get(task_id, config_id, caller)

    async def list_push_configs(
        self, task_id: str, caller: Caller
    ) -> list[TaskPushNotificationConfig]:
        await self._guard("push-config", task_id, caller)
        return await self._push_configs.list_all(task_id, caller)

    async def delete_push_config(self, task_id: str, config_id: str, caller: Caller) -> None:
        await self._guard("push-config", task_id, caller)
        await self._push_configs.delete(task_id, config_id, caller)

    # --- remote agents (accord.engine._remote) ------------------------------------------------

    async def agent_command(
        self, task_id: str, tenant: str, decide: Callable[[TaskRecord | None, int], Outcome]
    ) -> Outcome:
        """An agent command from outside this process (a remote worker): decided against the
        latest record of ``tenant`` (another tenant's task is not found), durable on return."""
        return await self._decide(task_id, tenant, decide)

    async def commit_created(self, task_id: str) -> None:
        """Make a new task durable without an agent move (remote workers pick it up from the
        feed), or a message held for its run's first command; nothing to do once it is."""
        live = self._live.get(task_id)
        if live is None:
            return
        # Shielded: this run is cancelled if the append fails, and the commit's future is
        # the one its cleanup (_finish_run) waits for.
        if live.pending is not None:
            created, live.pending = live.pending, None
            await asyncio.shield(self._commits.submit(created, 0, live.pending_configs))
        elif live.holds_message:
            self._commits.release(live)
            if live.last_commit is not None:
                await asyncio.shield(live.last_commit)

    def release_held(self, live: LiveTask) -> None:
        """Write the message held for ``live``'s run's first command now (TaskHandle.flush)."""
        self._commits.release(live)

    # --- helpers -----------------------------------------------------------------------------

    @staticmethod
    def _history_length(request: SendMessageRequest) -> int | None:
        if request.configuration is UNSET:
            return None
        return views.history_length(request.configuration.history_length)


async def _one_message(message: Message) -> AsyncIterator[StreamItem | None]:
    """The stream of a gate's direct answer: that one message."""
    yield StreamItem(StreamResponse(message=message), None)


def _agent_error(outcome: Outcome) -> AgentError:
    error = outcome.error
    message = error.message if error is not None else outcome.name
    if outcome.name == "wrong-state":
        state = (outcome.payload or {}).get("state", "")
        return WrongStateError(message, state)
    return AgentError(message)
