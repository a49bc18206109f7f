"""Making decided outcomes durable: each task's appends in the order they were decided, then
its followers woken and its commit listeners told.

A task with a running executor has its appends of one loop turn merged into one store append
(one snapshot write); its live record learns what is durable, and of a failed append. An
append of such a task that the store fails (rather than refuses) is not given up: it is kept,
with every later one, until the store takes them (accord.engine._outage).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from accord.core import Event, Outcome, PushConfigRecord, RequestKey, TaskRecord
from accord.engine._live import LiveTask, PendingWrite
from accord.store import DuplicateRequest, LimitExceeded, SeqConflict
from accord.telemetry import _tracing as tracing
from accord.wire import encode

if TYPE_CHECKING:
    from accord.engine._engine import Engine
    from accord.engine._outage import Outage

log = logging.getLogger("accord.engine")


class Commits:
    """The engine's write path. ``live`` is the engine's map of tasks with a run in this
    process (read, never changed here)."""

    def __init__(self, engine: Engine, live: Mapping[str, LiveTask]) -> None:
        self.engine = engine
        self.live = live
        self.listeners: list[Callable[[str], None]] = []
        # What keeps a live task's appends the store failed, to write them again once it
        # answers (set by the engine; None: such appends fail their callers at once).
        self.outage: Outage | None = None

    def submit(
        self,
        outcome: Outcome,
        expected_seq: int,
        configs: Sequence[PushConfigRecord] = (),
        *,
        hold: bool = False,
    ) -> asyncio.Future[None]:
        """Append the outcome's events (ordered behind every earlier submit), then store the
        push configs that came with the message, then wake the task's followers.

        For a task with a live executor, everything decided in the same loop turn is merged
        into one store append: an agent that works, emits an artifact and completes writes
        its task snapshot once, not three times. ``hold`` (a live task's first append: a
        message continuing it) keeps the append until the next submit to the task, which it
        goes with, or until :meth:`release`."""
        record = outcome.record
        assert record is not None
        live = self.live.get(record.id)
        if live is None:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._start_write(
                record.id,
                expected_seq,
                record,
                list(outcome.events),
                list(configs),
                done,
                None,
                outcome.requests,
            )
            return done
        live.record = record
        batch = live.batch
        if batch is None:
            loop = asyncio.get_running_loop()  # once: on Python 3.11 each call is a getpid()
            batch = live.batch = PendingWrite(
                expected_seq=expected_seq,
                record=record,
                events=[],
                configs=[],
                done=loop.create_future(),
                held=hold,
            )
            if not hold:
                loop.call_soon(self._flush, live)
        elif batch.held:  # the run's first command: the held message goes with it
            self.release(live)
        batch.record = record
        batch.events.extend(outcome.events)
        batch.configs.extend(configs)
        batch.requests.extend(outcome.requests)
        live.last_commit = batch.done
        return batch.done

    def release(self, live: LiveTask) -> None:
        """Write a held append at the end of this loop turn (with what else it decides)."""
        batch = live.batch
        if batch is not None and batch.held:
            batch.held = False
            asyncio.get_running_loop().call_soon(self._flush, live)

    def _flush(self, live: LiveTask) -> None:
        batch = live.batch
        if batch is None or batch.held:
            return
        live.batch = None
        if live.stall is not None:  # behind appends the store failed, written again first
            live.stall.add(batch)
            return
        self._start_write(
            live.task_id,
            batch.expected_seq,
            batch.record,
            batch.events,
            batch.configs,
            batch.done,
            live,
            batch.requests,
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
        requests: Sequence[RequestKey] = (),
    ) -> None:
        span = None
        tracer = tracing.tracer  # (a span per commit while tracing is on)
        if tracer is not None:
            span = tracer.start_span(
                "accord.commit",
                attributes={"a2a.task.id": task_id, "accord.commit.events": len(events)},
            )
        write: asyncio.Future[None]
        if configs:
            write = asyncio.ensure_future(
                self._write(record, events, expected_seq, configs, requests)
            )
        else:  # the store's own future when it gives one: no task for the write
            appended = self._append(record, events, expected_seq, requests)
            write = (
                appended
                if isinstance(appended, asyncio.Future)
                else asyncio.ensure_future(appended)
            )
        if live is not None:
            live.sending += 1

        def finished(write: asyncio.Future[None]) -> None:
            error = None if write.cancelled() else write.exception()
            if write.cancelled():
                error = asyncio.CancelledError()
            if span is not None:
                if error is not None:
                    span.set_attribute("error.type", type(error).__qualname__)
                span.end()
            if live is not None:
                live.sending -= 1
                if error is not None and self.outage is not None:
                    failed = PendingWrite(
                        expected_seq, record, events, configs, done, list(requests)
                    )
                    if self.outage.takes(live, failed, error):
                        return  # written again once the store answers
            self.settle(task_id, record, events, done, live, error)

        write.add_done_callback(finished)

    def settle(
        self,
        task_id: str,
        record: TaskRecord,
        events: list[Event],
        done: asyncio.Future[None],
        live: LiveTask | None,
        error: BaseException | None,
    ) -> None:
        """An append is durable (``error`` None) or failed for good: its live task learns
        of it, the task's followers are woken, whoever waits on ``done`` is told."""
        if error is None and live is not None:
            live.acknowledged(record, events)
        self._committed(task_id, error)
        if not done.done():
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)
                done.exception()  # retrieved here; callers that care await it

    def settle_held(self, write: PendingWrite, live: LiveTask, error: BaseException | None) -> None:
        """:meth:`settle` for an append the outage held (written again, or failed)."""
        self.settle(write.record.id, write.record, write.events, write.done, live, error)

    async def rewrite(self, write: PendingWrite) -> None:
        """Append ``write`` again after the store failed it (accord.engine._outage). An
        earlier attempt may have been committed after all (a connection lost during the
        commit): the store then refuses this one, and holding exactly its events counts as
        success. Raises what the store refuses otherwise, or fails with."""
        record = write.record
        try:
            await self._append(record, write.events, write.expected_seq, write.requests)
        except (SeqConflict, DuplicateRequest):
            if not await self._written(write):
                raise
        for config in write.configs:
            await self.engine.store.put_push_config(config, deliver_after=write.expected_seq)
            self.engine.push_config_stored(record.id)

    async def _written(self, write: PendingWrite) -> bool:
        """Whether the store holds ``write``'s events, as they are, at their places."""
        stored = await self.engine.store.read_events(
            write.record.id, write.expected_seq, len(write.events)
        )
        return len(stored) == len(write.events) and all(
            (a.seq, a.kind, a.at_ms) == (b.seq, b.kind, b.at_ms)
            and encode(a.body) == encode(b.body)
            for a, b in zip(stored, write.events, strict=True)
        )

    async def _write(
        self,
        record: TaskRecord,
        events: Sequence[Event],
        expected_seq: int,
        configs: Sequence[PushConfigRecord],
        requests: Sequence[RequestKey] = (),
    ) -> None:
        await self._append(record, events, expected_seq, requests)
        # Inline configs of a new task: delivered from its first event. No store-side limit:
        # nobody could add a config to the task before this append made it visible, so the
        # check in Engine._begin (against no configs) is exact.
        for config in configs:
            await self.engine.store.put_push_config(config, deliver_after=expected_seq)
            self.engine.push_config_stored(record.id)

    def _append(
        self,
        record: TaskRecord,
        events: Sequence[Event],
        expected_seq: int,
        requests: Sequence[RequestKey] = (),
    ) -> Awaitable[None]:
        # store.append enqueues before its first await (or before it returns a future), so
        # writes keep submission order. A creation is counted against the tenant's limit in
        # the store's transaction too: concurrent creations (here or on other nodes) passed
        # Engine._begin's check together.
        limit = self.engine.config.limits.tasks_per_tenant if expected_seq == 0 else None
        if requests:  # (the keys of client requests these events carry out: safe retries)
            return self.engine.store.append(
                record, events, expected_seq, tenant_task_limit=limit, requests=requests
            )
        return self.engine.store.append(record, events, expected_seq, tenant_task_limit=limit)

    def _committed(self, task_id: str, error: BaseException | None) -> None:
        if error is not None:
            live = self.live.get(task_id)
            if live is not None:
                live.record = None  # reload before the next decision
                # Nothing of a new task is stored: its creation failed (over the tenant's
                # limit, say), and every later append of it fails too; or the message held
                # for the run's first command is not stored. Its runs stop.
                durable = live.durable
                lost = (durable is None or durable.seq < live.message_seq) and not isinstance(
                    error, asyncio.CancelledError
                )
                # (a refused duplicate request wrote nothing either: the task is intact)
                refused = SeqConflict | DuplicateRequest | asyncio.CancelledError
                if lost or not isinstance(error, refused):
                    live.broken = live.broken or error
                if lost:
                    self.stop_runs(live)
            if isinstance(error, LimitExceeded | DuplicateRequest):
                log.info("task %s not stored: %s", task_id, error)
            elif not isinstance(error, SeqConflict | asyncio.CancelledError):
                log.error("append to task %s failed: %s", task_id, error)
            self.engine.bus.notify(task_id)
            return
        self.engine.bus.notify(task_id)
        for listener in self.listeners:
            listener(task_id)

    @staticmethod
    def stop_runs(live: LiveTask) -> None:
        """Cancel the agent of each run still in it (a run already finishing is left to
        finish: its cleanup must run)."""
        for run in live.runs:
            if run.task is not None and not run.ending:
                run.task.cancel()
