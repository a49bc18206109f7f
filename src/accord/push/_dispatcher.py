"""The push dispatcher: the durable outbox drained to webhooks.

The outbox is the task's event log plus a cursor per config (:class:`accord.store._base.
PushDelivery`); nothing is queued in memory that is not also in the store. The dispatcher's
jobs are configs, drained by a :class:`~accord.push._worker.DurableWorker`, which

- claims due configs from the store (a lease, so another node does not deliver the same
  config at the same time): right away when a task with configs commits or gets a config,
  on every ``poll_interval_s`` as a safety net (retries due, configs of other nodes, a lease
  left by a dead process), and on start (what a crash left undelivered);
- runs one job per claimed config. A job posts the task's streamed events after the
  cursor, one at a time and in order, moving the durable cursor after each success; so event
  n+1 is never posted before n succeeded, and a crash re-posts at most the event in flight
  (at-least-once: receivers dedupe by the ``X-A2A-Event-Id`` header);
- on a failure records it, gives the config back with a retry time (exponential backoff
  with jitter) and sets a timer; after ``max_attempts`` consecutive failures, or at once when
  the SSRF guard refuses the target, marks the config ``failing`` and stops delivering to it
  (logged as a warning without secrets). Re-creating the config resumes it where it stopped;
- stops delivering to a config once its task is terminal and every event is delivered
  (state ``done``); the config itself stays readable until it or its task is deleted.

Delivery never blocks the task or its streams (they do not wait for it) nor other configs
(each has its own job; at most ``concurrency`` posts run at once, at most ``max_workers``
jobs run, and a job holds one batch of events at a time).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from opentelemetry.trace import SpanKind, Status, StatusCode

from accord.core import Event, lifecycle
from accord.push._delivery import DeliveryError, Sender
from accord.push._headers import scrub
from accord.push._ssrf import AddressPolicy, Guard, RefusedTarget, loggable_origin
from accord.push._worker import DurableWorker, Failure, WorkerSettings, now_ms
from accord.store import DeliveryState, TaskStore
from accord.telemetry import PushStats
from accord.telemetry import _context as log_context
from accord.telemetry import _tracing as tracing
from accord.wire import TaskPushNotificationConfig, encode, invalid_params

log = logging.getLogger("accord.push")

Key = tuple[str, str]  # (task id, config id)


@dataclass(frozen=True, slots=True)
class PushSettings:
    allow: tuple[str, ...] = ()  # host names and CIDRs the SSRF guard admits
    timeout_s: float = 10.0  # one attempt, from resolving the name to the answer's status
    max_attempts: int = 8  # consecutive failures before a config is marked failing
    retry_base_s: float = 1.0  # first retry after about this long, doubling each time
    retry_max_s: float = 300.0
    concurrency: int = 64  # posts in flight at once
    max_workers: int = 1024  # configs being delivered at once (bounds memory)
    max_watched: int = 100_000  # tasks whose commits wake delivery at once (the rest: poll)
    poll_interval_s: float = 5.0
    batch: int = 64  # events read from the log at a time, per worker

    @property
    def lease_ms(self) -> int:
        # Longer than any attempt: a holder extends it after each success.
        return int(max(3 * self.timeout_s, 1.0) * 1000)


@dataclass(slots=True)
class _Claim:
    """A config being delivered, as recorded in the store (what a stop gives back)."""

    config: TaskPushNotificationConfig
    cursor: int  # every event up to it is delivered, or not streamed
    failures: int  # failed attempts in a row
    last_error: str
    lease_until: int
    held: bool = True  # the lease is this worker's: its run has not given the config back

    @property
    def key(self) -> Key:
        return (self.config.task_id, self.config.id)


def event_id(event: Event) -> str:
    """The identity a receiver dedupes by: the same event re-posted has the same id."""
    return f"{event.task_id}:{event.seq}"


class PushDispatcher:
    """Delivers push notifications; plugs into the engine (``Engine.attach_push``). The
    configs due are the jobs of a :class:`~accord.push._worker.DurableWorker`: one job per
    claimed config, which posts its events until it is caught up or an attempt fails."""

    chained = False  # (a config's job delivers everything the config is owed)

    def __init__(
        self,
        store: TaskStore,
        settings: PushSettings | None = None,
        *,
        guard: Guard | None = None,
        sender: Sender | None = None,
        clock: Callable[[], int] = now_ms,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.store = store
        self.settings = settings = settings or PushSettings()
        self.guard = guard or Guard(AddressPolicy(settings.allow))
        self.sender = sender or Sender(self.guard, settings.timeout_s)
        self.clock = clock
        self.worker: DurableWorker[_Claim] = DurableWorker(
            self,
            WorkerSettings.of(settings, max_running=settings.max_workers),
            name="push delivery",
            log=log,
            clock=clock,
            sleep=sleep,
            jitter=jitter,
        )
        self._slots = asyncio.Semaphore(settings.concurrency)
        # Tasks with configs that may still need delivering, newest last. Bounded: a task
        # dropped from it is only noticed by the poll, a few seconds later.
        self._watched: OrderedDict[str, None] = OrderedDict()
        self.stats = PushStats()  # attempts and their outcomes, for /metrics

    # --- engine hooks ------------------------------------------------------------------------

    async def check_url(self, url: str, field: str) -> None:
        """Registration: refuse a URL the guard refuses now (InvalidParams naming ``field``)."""
        try:
            await self.guard.check_registration(url)
        except RefusedTarget as exc:
            raise invalid_params(field, f"webhook URL refused: {exc}") from None

    def config_stored(self, task_id: str) -> None:
        self._watch(task_id)
        self.worker.ring(task_id)

    def _watch(self, task_id: str) -> None:
        self._watched[task_id] = None
        self._watched.move_to_end(task_id)
        while len(self._watched) > self.settings.max_watched:
            self._watched.popitem(last=False)

    def committed(self, task_id: str) -> None:
        if task_id in self._watched:  # one set lookup per commit of any task
            self.worker.ring(task_id)

    async def start(self) -> None:
        after = ("", "")
        while page := await self.store.list_push_deliveries("active", 1000, after):
            for delivery in page:
                self._watch(delivery.config.config.task_id)
            last = page[-1].config.config
            after = (last.task_id, last.id)
        await self.worker.start()

    async def stop(self) -> None:
        await self.worker.stop()  # (it gives back what the stopped jobs held)
        await self.sender.aclose()

    # --- the jobs: claimed configs -------------------------------------------------------------

    def key(self, job: _Claim) -> Key:
        return job.key

    def scope(self, job: _Claim) -> str:
        return job.config.task_id

    def failures(self, job: _Claim) -> int:
        return job.failures

    async def claim(
        self, now_ms: int, lease_ms: int, limit: int, scope: str | None
    ) -> list[_Claim]:
        claimed = await self.store.claim_push_deliveries(now_ms, lease_ms, limit, scope)
        if scope is None:  # (the poll: tasks no commit announced, to watch from now on)
            for delivery in claimed:
                self._watch(delivery.config.config.task_id)
        return [
            _Claim(d.config.config, d.cursor, d.failures, d.last_error, d.next_attempt_ms)
            for d in claimed
        ]

    def resumed(self, claimed: _Claim, previous: _Claim) -> _Claim:
        if claimed.cursor < previous.cursor:  # claimed before the previous run's last update
            return dataclasses.replace(claimed, cursor=previous.cursor, failures=0)
        return claimed

    async def release(self, job: _Claim) -> None:
        """Give back a stopped job's claim, so a restart need not wait for the lease."""
        if job.held:
            await self._record(job, "active", job.failures, job.last_error, 0)

    async def run(self, job: _Claim) -> Failure | None:
        task_id, config_id = job.key
        log_context.note_task(task_id)  # (the worker's JSON log lines name its task)
        try:
            return await self._deliver(job)
        except asyncio.CancelledError:
            raise
        except Exception:
            # The lease runs out and a later claim resumes from the durable cursor.
            job.held = False
            log.exception("push delivery for task %s, config %s broke", task_id, config_id)
            return None

    async def _deliver(self, job: _Claim) -> Failure | None:
        task_id, config_id = job.key
        config = job.config
        store = self.store
        while True:
            events = await store.read_events(task_id, job.cursor, self.settings.batch)
            if not events:
                record = await store.get_task(task_id, None)
                if record is None:
                    return None  # the task is gone, and its configs with it
                if record.seq > job.cursor:
                    continue
                done = lifecycle.is_terminal(record.state)
                job.held = False
                await store.update_push_delivery(
                    task_id,
                    config_id,
                    cursor=job.cursor,
                    state="done" if done else "active",
                    failures=0,
                    last_error="",
                    next_attempt_ms=0,
                )
                if done and self.worker.active(task_id) <= 1:  # (only this one)
                    self._watched.pop(task_id, None)
                return None
            for event in events:
                if not event.streamed:
                    job.cursor = event.seq  # history only; recorded with the next update
                    continue
                if not await self._acquire_slot(job):
                    return None  # the config was deleted
                try:
                    error = await self._attempt(config, event)
                finally:
                    self._slots.release()
                if error is not None:
                    job.held = False
                    # Messages are written to be free of secrets; an HTTP library's text
                    # might not be.
                    return Failure(scrub(str(error), config), permanent=error.permanent)
                lease_until = self.clock() + self.settings.lease_ms
                if not await store.update_push_delivery(
                    task_id,
                    config_id,
                    cursor=event.seq,
                    state="active",
                    failures=0,
                    last_error="",
                    next_attempt_ms=lease_until,
                ):
                    return None  # the config was deleted
                job.cursor, job.failures, job.last_error = event.seq, 0, ""
                job.lease_until = lease_until

    async def _acquire_slot(self, job: _Claim) -> bool:
        """Wait for one of the ``concurrency`` posting slots, keeping the claim alive meanwhile
        (when every slot is busy the wait can outlast a lease). False when the config no
        longer exists (no slot is then held)."""
        while True:
            if not await self._keep_lease(job):
                return False
            try:
                async with asyncio.timeout(self.settings.lease_ms / 3000):
                    await self._slots.acquire()
            except TimeoutError:
                continue
            return True

    async def _keep_lease(self, job: _Claim) -> bool:
        """Renew the claim unless it surely outlasts the coming attempt."""
        now = self.clock()
        if now + int(self.settings.timeout_s * 1000) + 1000 <= job.lease_until:
            return True
        job.lease_until = now + self.settings.lease_ms
        return await self._record(job, "active", job.failures, job.last_error, job.lease_until)

    async def _record(
        self, job: _Claim, state: DeliveryState, failures: int, last_error: str, next_ms: int
    ) -> bool:
        """Record where the job's config stands (False: the config no longer exists)."""
        return await self.store.update_push_delivery(
            *job.key,
            cursor=job.cursor,
            state=state,
            failures=failures,
            last_error=last_error,
            next_attempt_ms=next_ms,
        )

    async def _attempt(
        self, config: TaskPushNotificationConfig, event: Event
    ) -> DeliveryError | None:
        started = time.perf_counter()
        error = await self._post(config, event)
        stats = self.stats
        stats.duration.observe(time.perf_counter() - started)
        if error is None:
            stats.delivered += 1
        else:
            stats.failed += 1
        return error

    async def _post(self, config: TaskPushNotificationConfig, event: Event) -> DeliveryError | None:
        body = encode(event.stream_response())
        tracer = tracing.tracer
        if tracer is not None:  # a span per delivery; its traceparent goes with the POST
            with tracer.start_as_current_span(
                "accord.push",
                kind=SpanKind.CLIENT,
                attributes={
                    "a2a.task.id": event.task_id,
                    "accord.webhook.config_id": config.id,
                    "accord.webhook.event_seq": event.seq,
                },
            ) as span:
                error = await self._send(config, event, body)
                if error is not None:
                    span.set_status(Status(StatusCode.ERROR, str(error)))
                return error
        return await self._send(config, event, body)

    async def _send(
        self, config: TaskPushNotificationConfig, event: Event, body: bytes
    ) -> DeliveryError | None:
        try:
            async with asyncio.timeout(self.settings.timeout_s):
                await self.sender.send(config, event_id(event), body)
        except DeliveryError as exc:
            return exc
        except TimeoutError:
            return DeliveryError(f"timed out after {self.settings.timeout_s:g} s")
        except Exception as exc:  # a bug or an unexpected transport error: retried
            return DeliveryError(f"unexpected {type(exc).__name__}")
        return None

    async def give_up(self, job: _Claim, failures: int, failure: Failure) -> None:
        task_id, config_id = job.key
        self.stats.gave_up += 1
        await self._record(job, "failing", failures, failure.error, 0)
        log.warning(
            "push config %s of task %s (%s) is failing after %d attempt(s): %s; delivery "
            "stopped after event %d (re-create the config to resume)",
            config_id,
            task_id,
            loggable_origin(job.config.url),
            failures,
            failure.error,
            job.cursor,
        )

    async def retry(
        self, job: _Claim, failures: int, failure: Failure, delay_s: float, at_ms: int
    ) -> None:
        task_id, config_id = job.key
        await self._record(job, "active", failures, failure.error, at_ms)
        log.info(
            "push config %s of task %s (%s): attempt %d failed (%s); retrying in %.1f s",
            config_id,
            task_id,
            loggable_origin(job.config.url),
            failures,
            failure.error,
            delay_s,
        )


__all__ = ["PushDispatcher", "PushSettings", "event_id"]
