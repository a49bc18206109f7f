"""The running service: applies core commands through a store and a bus, runs executors, and
lets any number of followers read a task's log.

Every change goes core -> store (durable) -> bus (wake followers). Responses and streams read
only what the store holds, so nothing is shown before it is durable. Agent commands of a
running executor are decided against the in-memory latest record and appended without waiting
(the store keeps their order and commits them in groups); everything a client sees still waits
for durability.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from accord.agents.api import (
    AgentError,
    Executor,
    ExecutorFunction,
    RequestContext,
    WrongStateError,
)
from accord.bus.local import LocalBus
from accord.core import agent as agent_commands
from accord.core import client as client_commands
from accord.core import lifecycle, views
from accord.core._build import task_not_found
from accord.core.caller import Caller
from accord.core.events import Event
from accord.core.limits import Limits
from accord.core.outcome import Outcome
from accord.core.records import PushConfigRecord, TaskRecord
from accord.engine.live import LiveHandle, LiveTask, PendingWrite, Run, as_message
from accord.store.base import (
    LimitExceeded,
    SeqConflict,
    StoreError,
    TaskHolds,
    TaskSnapshots,
    TaskStore,
)
from accord.wire.codec import encode
from accord.wire.errors import A2AError, ErrorKind
from accord.wire.model import (
    UNSET,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

log = logging.getLogger("accord.engine")

FAILED_MESSAGE = "The agent failed while working on this task."
NOT_STORED_MESSAGE = "the task could not be stored"
RECOVERED_MESSAGE = (
    "accord stopped while this task was running and the agent cannot resume it; "
    "send the request again."
)
MAX_CONFLICT_RETRIES = 8
INLINE_URL_FIELD = "configuration.taskPushNotificationConfig.url"
READ_BATCH = 256


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def _new_id() -> str:
    """A random (version 4) UUID's text, without building a UUID object: three times
    cheaper than ``str(uuid.uuid4())``, and two are made per new task."""
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


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
    # False: ignore the store's TaskHolds and act as the only process on the store (recovery
    # once, at start, fails every task left running). Saves the lock round trips; safe only
    # for a single node, since another node would then fail this one's tasks and vice versa.
    task_holds: bool = True


@dataclass(frozen=True, slots=True)
class StreamItem:
    """One element of a stream: the StreamResponse and its log sequence number (None for a
    direct message, which is in no log)."""

    response: StreamResponse
    seq: int | None


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
        self._live: dict[str, LiveTask] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._commit_listeners: list[Callable[[str], None]] = []
        # (isinstance against a runtime-checkable Protocol costs microseconds: once, here)
        self._snapshots = store if isinstance(store, TaskSnapshots) else None
        self._holds: TaskHolds | None = (
            store if self.config.task_holds and isinstance(store, TaskHolds) else None
        )
        self._push: PushHooks | None = None
        self._start_hooks: list[Callable[[], Awaitable[None]]] = []
        self._started = False

    # --- life ------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.store.open()
        self._started = True
        if not self.config.resumable:
            await self.recover()
            if self._holds is not None:
                self._spawn(self._recovery_loop(self.config.recovery_interval_s))
        if self.config.retention_ms is not None:
            self._spawn(self._retention_loop(self.config.retention_ms))
        if self._push is not None:
            await self._push.start()
        add_remote_listener = getattr(self.bus, "add_remote_listener", None)
        if add_remote_listener is not None:
            add_remote_listener(self._remote_change)
        for hook in self._start_hooks:
            await hook()

    def on_start(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Await ``hook`` at the end of every :meth:`start`, with the store open (remote
        claims adopt running tasks and start their reaper, which stops with the engine)."""
        self._start_hooks.append(hook)

    async def stop(self) -> None:
        for live in list(self._live.values()):
            for run in list(live.runs):
                if run.task is not None:
                    run.task.cancel()
        for task in list(self._background):
            task.cancel()
        pending = [r.task for lv in self._live.values() for r in lv.runs if r.task is not None]
        await asyncio.gather(*pending, *self._background, return_exceptions=True)
        if self._push is not None:
            await self._push.stop()
        await self.store.close()
        self._started = False

    async def __aenter__(self) -> Engine:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def recover(self) -> int:
        """Fail tasks a dead process left SUBMITTED or WORKING. Returns how many."""
        recovered = 0
        after = ""
        states = frozenset({TaskState.SUBMITTED, TaskState.WORKING})
        while True:
            batch = await self.store.tasks_in_states(states, 500, after)
            if not batch:
                return recovered
            for record in batch:
                if record.id in self._live:
                    continue
                if self._holds is not None and await self._holds.task_held_elsewhere(record.id):
                    continue  # a live node runs it
                status = as_message(RECOVERED_MESSAGE, record.id, record.task.context_id)

                def fail(rec: TaskRecord | None, now: int, s: Message | None = status) -> Outcome:
                    return agent_commands.move(rec, "fail", now, s)

                outcome = await self._decide(record.id, None, fail)
                recovered += outcome.ok
            after = batch[-1].id

    async def _recovery_loop(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.recover()
            except Exception:
                log.exception("recovery sweep failed")

    async def _retention_loop(self, age_ms: int) -> None:
        while True:
            try:
                while await self.store.delete_terminal_before(self.clock() - age_ms, 500):
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
            self._spawn(self._refresh(live))

    async def _refresh(self, live: LiveTask) -> None:
        record = await self.store.get_task(live.task_id, None)
        if record is None or (live.durable is not None and record.seq <= live.durable.seq):
            return
        live.durable = record
        in_flight = live.batch is not None or (
            live.last_commit is not None and not live.last_commit.done()
        )
        if not in_flight:
            live.record = record  # (in flight, our append will conflict and reload instead)
        self.bus.notify(live.task_id)
        if lifecycle.is_terminal(record.state):
            for run in list(live.runs):
                await self._cancel_run(run)

    # --- deciding and committing -------------------------------------------------------------

    def _submit(
        self,
        outcome: Outcome,
        expected_seq: int,
        configs: Sequence[PushConfigRecord] = (),
    ) -> asyncio.Future[None]:
        """Append the outcome's events (ordered behind every earlier submit), then store the
        push configs that came with the message, then wake the task's followers.

        For a task with a live executor, everything decided in the same loop turn is merged
        into one store append: an agent that works, emits an artifact and completes writes
        its task snapshot once, not three times."""
        record = outcome.record
        assert record is not None
        live = self._live.get(record.id)
        if live is None:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._start_write(
                record.id, expected_seq, record, list(outcome.events), list(configs), done, None
            )
            return done
        live.record = record
        batch = live.batch
        if batch is None:
            batch = live.batch = PendingWrite(
                expected_seq=expected_seq,
                record=record,
                events=[],
                configs=[],
                done=asyncio.get_running_loop().create_future(),
            )
            asyncio.get_running_loop().call_soon(self._flush, live)
        batch.record = record
        batch.events.extend(outcome.events)
        batch.configs.extend(configs)
        live.last_commit = batch.done
        return batch.done

    def _flush(self, live: LiveTask) -> None:
        batch = live.batch
        if batch is None:
            return
        live.batch = None
        self._start_write(
            live.task_id,
            batch.expected_seq,
            batch.record,
            batch.events,
            batch.configs,
            batch.done,
            live,
        )

    def _start_write(
        self,
        task_id: str,
        expected_seq: int,
        record: TaskRecord,
        events: list[Event],
        configs: list[PushConfigRecord],
        done: asyncio.Future[None],
        live: LiveTask | None,
    ) -> None:
        write = asyncio.ensure_future(self._write(record, events, expected_seq, configs))

        def finished(write: asyncio.Future[None]) -> None:
            error = None if write.cancelled() else write.exception()
            if write.cancelled():
                error = asyncio.CancelledError()
            if (
                error is None
                and live is not None
                and (live.durable is None or record.seq > live.durable.seq)
            ):
                live.durable = record
            self._committed(task_id, error)
            if not done.done():
                if error is None:
                    done.set_result(None)
                else:
                    done.set_exception(error)
                    done.exception()  # retrieved here; callers that care await it

        write.add_done_callback(finished)

    async def _write(
        self,
        record: TaskRecord,
        events: Sequence[Event],
        expected_seq: int,
        configs: Sequence[PushConfigRecord],
    ) -> None:
        # store.append enqueues before its first await, so writes keep submission order.
        # A creation is counted against the tenant's limit in the store's transaction too:
        # concurrent creations (here or on other nodes) passed the check in _begin together.
        limit = self.config.limits.tasks_per_tenant if expected_seq == 0 else None
        await self.store.append(record, events, expected_seq, tenant_task_limit=limit)
        # Inline configs of a new task: delivered from its first event. No store-side limit:
        # nobody could add a config to the task before this append made it visible, so the
        # check in _begin (against no configs) is exact.
        for config in configs:
            await self.store.put_push_config(config, deliver_after=expected_seq)
            self._push_config_stored(record.id)

    # --- push hooks (kept apart: the engine runs without push delivery too) ----------------

    def attach_push(self, push: PushHooks) -> None:
        """Deliver push notifications with ``push``: it checks webhook URLs at registration,
        hears of stored configs and commits, and starts and stops with the engine."""
        self._push = push
        self.add_commit_listener(push.committed)

    async def _check_push_url(self, url: str, field: str) -> None:
        if self._push is not None:
            await self._push.check_url(url, field)

    def _push_config_stored(self, task_id: str) -> None:
        if self._push is not None:
            self._push.config_stored(task_id)

    def add_commit_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(task_id)`` after every durable append (push delivery uses it)."""
        self._commit_listeners.append(listener)

    def _committed(self, task_id: str, error: BaseException | None) -> None:
        if error is not None:
            live = self._live.get(task_id)
            if live is not None:
                live.record = None  # reload before the next decision
                # Nothing of a new task is stored: its creation failed (over the tenant's
                # limit, say), and every later append of it fails too. Its runs stop.
                lost = live.durable is None and not isinstance(error, asyncio.CancelledError)
                if lost or not isinstance(error, SeqConflict | asyncio.CancelledError):
                    live.broken = live.broken or error
                if lost:
                    self._stop_runs(live)
            if isinstance(error, LimitExceeded):
                log.info("task %s not created: %s", task_id, error)
            elif not isinstance(error, SeqConflict | asyncio.CancelledError):
                log.error("append to task %s failed: %s", task_id, error)
            self.bus.notify(task_id)
            return
        self.bus.notify(task_id)
        for listener in self._commit_listeners:
            listener(task_id)

    @staticmethod
    def _stop_runs(live: LiveTask) -> None:
        """Cancel the agent of each run still in it (a run already finishing is left to
        finish: its cleanup must run)."""
        for run in live.runs:
            if run.task is not None and not run.ending:
                run.task.cancel()

    @staticmethod
    def _creation_failed(live: LiveTask) -> A2AError | None:
        """What the client of a new task is told when its creation could not be stored."""
        error = live.broken
        if error is None or live.durable is not None:
            return None
        if isinstance(error, LimitExceeded):
            return _limit_error(error)
        return A2AError(ErrorKind.INTERNAL, NOT_STORED_MESSAGE)

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
    ) -> Outcome:
        """Decide against the latest record and make the result durable, retrying when
        another writer got there first."""
        for _ in range(MAX_CONFLICT_RETRIES):
            record = await self._current(task_id, tenant)
            outcome = decide(record, self.clock())
            if not outcome.ok or not outcome.events:
                return outcome
            try:
                await self._submit(outcome, record.seq if record else 0)
            except SeqConflict:
                continue
            return outcome
        raise A2AError(ErrorKind.INTERNAL, f"task {task_id!r} is too busy; try again")

    async def agent_act(
        self, live: LiveTask, decide: Callable[[TaskRecord | None, int], Outcome]
    ) -> Outcome:
        """An agent command from a running executor: decided now, appended in order."""
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
            outcome.events = [*created.events, *outcome.events]
            outcome.published = [*created.published, *outcome.published]
            self._submit(outcome, 0, live.pending_configs)
            return outcome
        if live.record is None:
            live.record = await self.store.get_task(live.task_id, None)
        outcome = decide(live.record, now)
        if not outcome.ok:
            raise _agent_error(outcome)
        assert live.record is not None
        self._submit(outcome, live.record.seq)
        return outcome

    def agent_reply(self, live: LiveTask, run: Run, reply: Message) -> None:
        if run.ctx.task is not None or live.pending is None:
            raise AgentError(
                "reply() answers a new message without a task; this task exists already, "
                "so send the text as a status message (e.g. complete(message))"
            )
        if run.reply is not None:
            raise AgentError("reply() may be called once")
        run.reply = reply
        self.bus.notify(live.task_id)

    # --- running executors -------------------------------------------------------------------

    async def _hold(self, task_id: str) -> None:
        """Tell other nodes this one runs the task (before anything of the run is written,
        so their recovery never mistakes it for a dead node's)."""
        if self._holds is not None and task_id not in self._live:
            await self._holds.hold_task(task_id)

    def _start_run(self, live: LiveTask, ctx: RequestContext, start: TaskRecord) -> Run:
        run: Run
        handle = LiveHandle(self, live, lambda: run)
        run = Run(ctx=ctx, handle=handle, start=start)
        live.runs.add(run)
        self._live[live.task_id] = live
        run.task = asyncio.ensure_future(self._run(live, run))
        return run

    async def _run(self, live: LiveTask, run: Run) -> None:
        try:
            await self._execute(run.ctx, run.handle)
        except asyncio.CancelledError:
            pass  # CancelTask or shutdown; the task's state was decided by whoever cancelled
        except WrongStateError as exc:
            log.info("agent stopped on task %s: %s", live.task_id, exc)
        except Exception:
            log.exception("agent failed on task %s", live.task_id)
            await self._fail_after_error(live)
        finally:
            await self._finish_run(live, run)

    async def _fail_after_error(self, live: LiveTask) -> None:
        status = as_message(FAILED_MESSAGE, live.task_id)
        with contextlib.suppress(AgentError, A2AError):  # already terminal: nothing to fail
            await self.agent_act(
                live, lambda rec, now: agent_commands.move(rec, "fail", now, status)
            )

    async def _finish_run(self, live: LiveTask, run: Run) -> None:
        run.ending = True  # from here on the run is not cancelled (see _stop_runs)
        if live.pending is not None and run.reply is None:
            # The agent ended without answering: the client still gets its task.
            created = live.pending
            live.pending = None
            self._submit(created, 0, live.pending_configs)
        # (A commit future cancelled by a caller who awaited it unshielded carries no result.)
        if live.last_commit is not None and not live.last_commit.cancelled():
            with contextlib.suppress(Exception):
                await asyncio.shield(live.last_commit)
        run.finished = True  # only now: everything the run emitted is durable
        live.runs.discard(run)
        if not live.runs and self._live.get(live.task_id) is live:
            del self._live[live.task_id]
            if self._holds is not None:
                self._spawn(self._holds.release_task(live.task_id))
        self.bus.notify(live.task_id)

    # --- client commands ---------------------------------------------------------------------

    async def _begin(self, request: SendMessageRequest, caller: Caller) -> tuple[LiveTask, Run]:
        """Decide a SendMessage and start the agent on it."""
        message = request.message
        tenant = caller.tenant
        limits = self.config.limits
        task_count = (
            await self.store.count_tasks(tenant) if limits.tasks_per_tenant is not None else 0
        )
        new_task_id, new_context_id = self.new_id(), self.new_id()

        def decide(record: TaskRecord | None, now: int) -> Outcome:
            return client_commands.send_message(
                request,
                tenant=tenant,
                task=record,
                tenant_task_count=task_count,
                now_ms=now,
                new_task_id=new_task_id,
                new_context_id=new_context_id,
                limits=limits,
                accept_client_context_ids=self.config.accept_client_context_ids,
                input_modes=self.config.input_modes,
            )

        extensions: list[str] = []
        metadata = request.metadata if request.metadata is not UNSET else {}
        inline = (
            request.configuration.task_push_notification_config
            if request.configuration is not UNSET
            else UNSET
        )
        if inline is not UNSET and not self.config.push_notifications:
            raise A2AError(
                ErrorKind.PUSH_NOT_SUPPORTED, "this agent does not support push notifications"
            )
        if inline is not UNSET:
            await self._check_push_url(inline.url, INLINE_URL_FIELD)
        if message.task_id:
            outcome = await self._decide(message.task_id, tenant, decide)
            if outcome.error is not None:
                raise outcome.error
            record = outcome.record
            assert record is not None
            if inline is not UNSET:
                existing = await self.store.list_push_configs(record.id)
                config = self._inline_config(record, inline, tenant, existing)
                await self._put_config(config)
            live = self._live.get(record.id) or LiveTask(record.id, tenant, record, durable=record)
            ctx = RequestContext(
                message=record.task.history[-1],
                task_id=record.id,
                context_id=record.task.context_id,
                caller=caller,
                task=record.task,
                extensions=extensions,
                metadata=metadata,
            )
            await self._hold(record.id)
            return live, self._start_run(live, ctx, record)
        outcome = decide(None, self.clock())
        if outcome.error is not None:
            raise outcome.error
        record = outcome.record
        assert record is not None
        live = LiveTask(record.id, tenant, None, pending=outcome)
        if inline is not UNSET:
            live.pending_configs.append(self._inline_config(record, inline, tenant, []))
        ctx = RequestContext(
            message=record.task.history[-1],
            task_id=record.id,
            context_id=record.task.context_id,
            caller=caller,
            extensions=extensions,
            metadata=metadata,
        )
        await self._hold(record.id)
        return live, self._start_run(live, ctx, record)

    def _inline_config(
        self,
        record: TaskRecord,
        config: TaskPushNotificationConfig,
        tenant: str,
        existing: Sequence[PushConfigRecord],
    ) -> PushConfigRecord:
        """A push config sent inline with a message, checked as CreateTaskPushNotificationConfig
        would check it."""
        outcome = client_commands.create_push_config(
            record,
            msgspec.structs.replace(config, task_id=record.id),
            tenant=tenant,
            existing=existing,
            new_id=self.new_id(),
            now_ms=self.clock(),
            limits=self.config.limits,
        )
        if outcome.error is not None:
            raise outcome.error
        assert outcome.config is not None
        return outcome.config

    async def send_message(
        self, request: SendMessageRequest, caller: Caller, extensions: list[str] | None = None
    ) -> Task | Message:
        """SendMessage: the task once it is terminal or interrupted (or right away with
        ``returnImmediately``), or the agent's direct reply. Items of the streaming
        variants are None when ``heartbeat`` seconds pass idle (for keep-alives)."""
        history_length = self._history_length(request)
        immediate = request.configuration is not UNSET and request.configuration.return_immediately
        live, run = await self._begin(request, caller)
        if extensions:
            run.ctx.extensions.extend(extensions)
        with self.bus.subscribe(live.task_id) as sub:
            while True:
                sub.clear()
                if run.reply is not None:
                    return run.reply
                if immediate and live.pending is not None:
                    created = live.pending
                    live.pending = None
                    with contextlib.suppress(StoreError):  # live.broken says why, below
                        await asyncio.shield(self._submit(created, 0, live.pending_configs))
                    continue
                record = live.durable
                # Not read while the creation waits for the agent: the store cannot have it.
                if (record is None or record.seq < run.start.seq) and live.created:
                    record = await self.store.get_task(live.task_id, caller.tenant)
                failed = self._creation_failed(live) if record is None else None
                if failed is not None:
                    raise failed
                if record is not None and record.seq >= run.start.seq:
                    moved = record.seq > run.start.seq
                    if immediate or run.finished or (moved and lifecycle.ends_turn(record.state)):
                        return views.present(record.task, history_length)
                await sub.wait()

    async def send_streaming_message(
        self,
        request: SendMessageRequest,
        caller: Caller,
        extensions: list[str] | None = None,
        heartbeat: float | None = None,
    ) -> AsyncIterator[StreamItem | None]:
        """SendStreamingMessage: decided before the first item (errors raise here), then the
        task and its updates until the turn ends, or one direct message."""
        if not self.config.streaming:
            raise A2AError(ErrorKind.UNSUPPORTED_OPERATION, "this agent does not stream")
        history_length = self._history_length(request)
        live, run = await self._begin(request, caller)
        if extensions:
            run.ctx.extensions.extend(extensions)
        return self._stream_turn(live, run, caller.tenant, history_length, heartbeat)

    async def _stream_turn(
        self,
        live: LiveTask,
        run: Run,
        tenant: str,
        history_length: int | None,
        heartbeat: float | None,
    ) -> AsyncIterator[StreamItem | None]:
        start = run.start
        with self.bus.subscribe(live.task_id) as sub:
            while True:  # the first item: a reply, or the task as this turn began, once durable
                sub.clear()
                if run.reply is not None:
                    yield StreamItem(StreamResponse(message=run.reply), None)
                    return
                record = live.durable
                if (record is None or record.seq < start.seq) and live.created:
                    record = await self.store.get_task(live.task_id, tenant)
                failed = self._creation_failed(live) if record is None else None
                if failed is not None:
                    raise failed
                if record is not None and record.seq >= start.seq:
                    break
                if not await sub.wait(heartbeat):
                    yield None
            yield StreamItem(
                StreamResponse(task=views.present(start.task, history_length)), start.seq
            )
            if lifecycle.ends_turn(start.state):
                return
            async for event in self._follow(
                sub, live.task_id, start.seq, until_turn_end=True, heartbeat=heartbeat
            ):
                yield None if event is None else StreamItem(event.stream_response(), event.seq)

    async def _follow(
        self,
        sub: Any,
        task_id: str,
        after_seq: int,
        *,
        until_turn_end: bool,
        heartbeat: float | None = None,
    ) -> AsyncIterator[Event | None]:
        """Streamed events after ``after_seq``, in order, until the task is terminal (or its
        turn ends); None when ``heartbeat`` seconds pass with nothing new. Reads the log in
        bounded batches, so a slow follower holds no more than one batch."""
        cursor = after_seq
        while True:
            sub.clear()
            events = await self.store.read_events(task_id, cursor, READ_BATCH)
            for event in events:
                cursor = event.seq
                if not event.streamed:
                    continue
                yield event
                state = _state_after(event)
                if state is not None and (
                    lifecycle.is_terminal(state) or (until_turn_end and lifecycle.ends_turn(state))
                ):
                    return
            if events:
                continue
            live = self._live.get(task_id)
            if until_turn_end and (live is None or not live.runs):
                # No executor will move the task further in this process.
                if not await self.store.read_events(task_id, cursor, 1):
                    return
                continue
            if not await sub.wait(heartbeat):
                yield None

    async def subscribe(
        self,
        task_id: str,
        caller: Caller,
        after_seq: int | None = None,
        heartbeat: float | None = None,
    ) -> AsyncIterator[StreamItem | None]:
        """SubscribeToTask: decided here (errors raise), then the current task and every
        update until the task is terminal. With ``after_seq`` (SSE Last-Event-ID) the stream
        resumes after that event instead of starting with the task."""
        record = await self.store.get_task(task_id, caller.tenant)
        if after_seq is None:
            outcome = client_commands.subscribe(
                record, tenant=caller.tenant, task_id=task_id, streaming=self.config.streaming
            )
            if outcome.error is not None:
                raise outcome.error
        elif record is None:
            raise task_not_found(task_id)
        assert record is not None
        return self._stream_task(record, after_seq, heartbeat)

    async def _stream_task(
        self, record: TaskRecord, after_seq: int | None, heartbeat: float | None
    ) -> AsyncIterator[StreamItem | None]:
        with self.bus.subscribe(record.id) as sub:
            if after_seq is None:
                yield StreamItem(StreamResponse(task=record.task), record.seq)
                after_seq = record.seq
            # A Last-Event-ID past the log's end has seen everything there is.
            after_seq = min(after_seq, record.seq)
            if lifecycle.is_terminal(record.state):
                # The log is final: replay what follows after_seq, then end (following it
                # would wait forever for a terminal event the client has already seen).
                while events := await self.store.read_events(record.id, after_seq, READ_BATCH):
                    for logged in events:
                        after_seq = logged.seq
                        if logged.streamed:
                            yield StreamItem(logged.stream_response(), logged.seq)
                return
            async for event in self._follow(
                sub, record.id, after_seq, until_turn_end=False, heartbeat=heartbeat
            ):
                yield None if event is None else StreamItem(event.stream_response(), event.seq)

    async def get_task(
        self, task_id: str, caller: Caller, history_length: int | None = None
    ) -> Task:
        record = await self.store.get_task(task_id, caller.tenant)
        outcome = client_commands.get_task(record, tenant=caller.tenant, task_id=task_id)
        if outcome.error is not None:
            raise outcome.error
        assert record is not None
        return views.present(record.task, history_length)

    async def get_task_json(self, task_id: str, caller: Caller) -> bytes:
        """GetTask without historyLength as ProtoJSON bytes: the stored snapshot as it is when
        the store keeps it that way (what ``encode(get_task(…))`` gives, without decoding and
        re-encoding the task)."""
        if self._snapshots is None:
            return encode(await self.get_task(task_id, caller))
        snapshot = await self._snapshots.get_snapshot(task_id, caller.tenant)
        if snapshot is None:
            outcome = client_commands.get_task(None, tenant=caller.tenant, task_id=task_id)
            assert outcome.error is not None
            raise outcome.error
        return snapshot

    async def list_tasks(self, request: ListTasksRequest, caller: Caller) -> ListTasksResponse:
        query = views.list_query(request, caller.tenant)
        page = await self.store.list_tasks(query)
        return ListTasksResponse(
            tasks=[
                views.present(r.task, query.history_length, query.include_artifacts)
                for r in page.records
            ],
            next_page_token=page.next_cursor.token() if page.next_cursor else "",
            page_size=query.page_size,
            total_size=page.total_size,
        )

    async def cancel_task(self, task_id: str, caller: Caller) -> Task:
        outcome = await self._decide(
            task_id,
            caller.tenant,
            lambda record, now: client_commands.cancel_task(
                record, tenant=caller.tenant, task_id=task_id, now_ms=now
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

    # --- push-notification configs -----------------------------------------------------------

    async def create_push_config(
        self, config: TaskPushNotificationConfig, caller: Caller
    ) -> TaskPushNotificationConfig:
        tenant = caller.tenant
        record = await self.store.get_task(config.task_id, tenant)
        existing = await self.store.list_push_configs(config.task_id) if record else []
        outcome = client_commands.create_push_config(
            record,
            config,
            tenant=tenant,
            existing=existing,
            new_id=self.new_id(),
            now_ms=self.clock(),
            limits=self.config.limits,
            push_supported=self.config.push_notifications,
        )
        if outcome.error is not None:
            raise outcome.error
        assert outcome.config is not None
        await self._check_push_url(config.url, "url")
        await self._put_config(outcome.config)
        return outcome.config.config

    async def _put_config(self, config: PushConfigRecord) -> None:
        """Store a config of an existing task, under the task's config limit (counted again
        by the store: concurrent puts passed the check before it together)."""
        try:
            await self.store.put_push_config(
                config, max_per_task=self.config.limits.push_configs_per_task
            )
        except LimitExceeded as exc:
            raise _limit_error(exc) from None
        self._push_config_stored(config.config.task_id)

    async def get_push_config(
        self, task_id: str, config_id: str, caller: Caller
    ) -> TaskPushNotificationConfig:
        record = await self.store.get_task(task_id, caller.tenant)
        stored = await self.store.get_push_config(task_id, config_id) if record else None
        outcome = client_commands.get_push_config(
            record,
            stored,
            tenant=caller.tenant,
            task_id=task_id,
            config_id=config_id,
            push_supported=self.config.push_notifications,
        )
        if outcome.error is not None:
            raise outcome.error
        return outcome.configs[0]

    async def list_push_configs(
        self, task_id: str, caller: Caller
    ) -> list[TaskPushNotificationConfig]:
        record = await self.store.get_task(task_id, caller.tenant)
        stored = await self.store.list_push_configs(task_id) if record else []
        outcome = client_commands.list_push_configs(
            record,
            stored,
            tenant=caller.tenant,
            task_id=task_id,
            push_supported=self.config.push_notifications,
        )
        if outcome.error is not None:
            raise outcome.error
        return outcome.configs

    async def delete_push_config(self, task_id: str, config_id: str, caller: Caller) -> None:
        record = await self.store.get_task(task_id, caller.tenant)
        outcome = client_commands.delete_push_config(
            record,
            tenant=caller.tenant,
            task_id=task_id,
            config_id=config_id,
            push_supported=self.config.push_notifications,
        )
        if outcome.error is not None:
            raise outcome.error
        await self.store.delete_push_config(task_id, config_id)

    # --- remote agents (accord.engine.remote) ------------------------------------------------

    async def agent_command(
        self, task_id: str, tenant: str, decide: Callable[[TaskRecord | None, int], Outcome]
    ) -> Outcome:
        """An agent command from outside this process (a remote worker): decided against the
        latest record of ``tenant`` (another tenant's task is not found), durable on return."""
        return await self._decide(task_id, tenant, decide)

    async def commit_created(self, task_id: str) -> None:
        """Make a new task durable without an agent move (remote workers pick it up from the
        feed); nothing to do once it is."""
        live = self._live.get(task_id)
        if live is not None and live.pending is not None:
            created, live.pending = live.pending, None
            # Shielded: this run is cancelled if the creation fails, and the commit's future
            # is the one its cleanup (_finish_run) waits for.
            await asyncio.shield(self._submit(created, 0, live.pending_configs))

    # --- helpers -----------------------------------------------------------------------------

    @staticmethod
    def _history_length(request: SendMessageRequest) -> int | None:
        if request.configuration is UNSET:
            return None
        return views.history_length(request.configuration.history_length)


def _state_after(event: Event) -> TaskState | None:
    if event.kind == "status":
        state = getattr(event.body, "status").state  # noqa: B009
        assert isinstance(state, TaskState)
        return state
    if event.kind == "task":
        state = getattr(event.body, "status").state  # noqa: B009
        assert isinstance(state, TaskState)
        return state
    return None


def _limit_error(exc: LimitExceeded) -> A2AError:
    """The store's refusal as the client gets it: the same error the check before it gives."""
    if exc.limit == "tasks_per_tenant":
        return client_commands.task_limit_error(exc.value)
    return client_commands.config_limit_error(exc.value, exc.task_id)


def _agent_error(outcome: Outcome) -> AgentError:
    error = outcome.error
    message = error.message if error is not None else outcome.name
    if outcome.name == "wrong-state":
        state = (outcome.payload or {}).get("state", "")
        return WrongStateError(message, state)
    return AgentError(message)
