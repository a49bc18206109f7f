"""The push dispatcher: the durable outbox drained to webhooks.

The outbox is the task's event log plus a cursor per config (:class:`accord.store.base.
PushDelivery`); nothing is queued in memory that is not also in the store. The dispatcher

- claims due configs from the store (a lease, so another node does not deliver the same
  config at the same time): right away when a task with configs commits or gets a config,
  on every ``poll_interval_s`` as a safety net (retries due, configs of other nodes, a lease
  left by a dead process), and on start (what a crash left undelivered);
- runs one worker per claimed config. A worker posts the task's streamed events after the
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
(each has its own worker; at most ``concurrency`` posts run at once, at most ``max_workers``
workers exist, and a worker holds one batch of events at a time).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from opentelemetry.trace import SpanKind, Status, StatusCode

from accord.core import lifecycle
from accord.core.events import Event
from accord.push.delivery import DeliveryError, Sender
from accord.push.headers import scrub
from accord.push.ssrf import AddressPolicy, Guard, RefusedTarget, loggable_origin
from accord.store.base import PushDelivery, TaskStore
from accord.telemetry import context as log_context
from accord.telemetry import tracing
from accord.telemetry.metrics import PushStats
from accord.wire.codec import encode
from accord.wire.errors import invalid_params
from accord.wire.model import TaskPushNotificationConfig

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
class _Held:
    """A claim a worker holds, as recorded in the store (to give it back on shutdown)."""

    cursor: int
    failures: int
    last_error: str
    lease_until: int


def event_id(event: Event) -> str:
    """The identity a receiver dedupes by: the same event re-posted has the same id."""
    return f"{event.task_id}:{event.seq}"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class PushDispatcher:
    """Delivers push notifications; plugs into the engine (``Engine.attach_push``)."""

    def __init__(
        self,
        store: TaskStore,
        settings: PushSettings | None = None,
        *,
        guard: Guard | None = None,
        sender: Sender | None = None,
        clock: Callable[[], int] = _now_ms,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.store = store
        self.settings = settings or PushSettings()
        self.guard = guard or Guard(AddressPolicy(self.settings.allow))
        self.sender = sender or Sender(self.guard, self.settings.timeout_s)
        self.clock = clock
        self.jitter = jitter
        self._slots = asyncio.Semaphore(self.settings.concurrency)
        # Tasks with configs that may still need delivering, newest last. Bounded: a task
        # dropped from it is only noticed by the poll, a few seconds later.
        self._watched: OrderedDict[str, None] = OrderedDict()
        self._workers: dict[Key, asyncio.Task[None]] = {}
        self._again: set[Key] = set()  # a running worker should read the log once more
        self._handoff: dict[Key, PushDelivery] = {}  # claimed while its worker was finishing
        self._claims: set[str] = set()  # tasks to claim for
        self._claim_wanted = asyncio.Event()
        self._timers: dict[Key, asyncio.TimerHandle] = {}
        self._held: dict[Key, _Held] = {}
        self._loops: list[asyncio.Task[None]] = []
        self._running = False
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
        self._wake(task_id)

    def _watch(self, task_id: str) -> None:
        self._watched[task_id] = None
        self._watched.move_to_end(task_id)
        while len(self._watched) > self.settings.max_watched:
            self._watched.popitem(last=False)

    def committed(self, task_id: str) -> None:
        if task_id in self._watched:  # one set lookup per commit of any task
            self._wake(task_id)

    async def start(self) -> None:
        self._running = True
        after = ("", "")
        while page := await self.store.list_push_deliveries("active", 1000, after):
            for delivery in page:
                self._watch(delivery.config.config.task_id)
            last = page[-1].config.config
            after = (last.task_id, last.id)
        self._loops = [
            asyncio.ensure_future(self._claim_loop()),
            asyncio.ensure_future(self._poll_loop()),
        ]

    async def stop(self) -> None:
        self._running = False
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        tasks = [*self._loops, *self._workers.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loops = []
        # Give back what the stopped workers held, so a restart need not wait for the leases.
        held, self._held = self._held, {}
        for (task_id, config_id), claim in held.items():
            with contextlib.suppress(Exception):
                await self.store.update_push_delivery(
                    task_id,
                    config_id,
                    cursor=claim.cursor,
                    state="active",
                    failures=claim.failures,
                    last_error=claim.last_error,
                    next_attempt_ms=0,
                )
        await self.sender.aclose()

    # --- claiming ------------------------------------------------------------------------------

    def _wake(self, task_id: str) -> None:
        if not self._running:
            return
        self._again.update(key for key in self._workers if key[0] == task_id)
        self._claims.add(task_id)
        self._claim_wanted.set()

    async def _claim_loop(self) -> None:
        while True:
            await self._claim_wanted.wait()
            self._claim_wanted.clear()
            wanted, self._claims = self._claims, set()
            # Never more claims than free workers: what does not fit waits for the next wake
            # or poll (a claim left unmade is still in the store, nothing is lost).
            room = self.settings.max_workers - len(self._workers)
            batch = sorted(wanted)[: max(room, 0)]
            self._claims.update(wanted.difference(batch))
            if not batch:
                continue
            limit = min(100, room // len(batch))
            now = self.clock()
            results = await asyncio.gather(
                *(
                    self.store.claim_push_deliveries(now, self.settings.lease_ms, limit, task_id)
                    for task_id in batch
                ),
                return_exceptions=True,
            )
            for result in results:
                if isinstance(result, BaseException):
                    log.error("claiming push deliveries failed: %s", result)
                    continue
                for delivery in result:
                    self._start(delivery)

    async def _poll_loop(self) -> None:
        while True:
            try:
                await self._poll()
            except Exception:
                log.exception("push delivery poll failed")
            await asyncio.sleep(self.settings.poll_interval_s)

    async def _poll(self) -> None:
        """Claim everything due, as far as workers are free."""
        while (room := self.settings.max_workers - len(self._workers)) > 0:
            claimed = await self.store.claim_push_deliveries(
                self.clock(), self.settings.lease_ms, min(room, 500)
            )
            for delivery in claimed:
                self._watch(delivery.config.config.task_id)
                self._start(delivery)
            if len(claimed) < min(room, 500):
                return

    def _start(self, delivery: PushDelivery) -> None:
        config = delivery.config.config
        key = (config.task_id, config.id)
        if key in self._workers:  # its worker is giving it back right now: run it after
            self._handoff[key] = delivery
            return
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self._workers[key] = asyncio.ensure_future(self._run(key, delivery))

    # --- delivering ----------------------------------------------------------------------------

    async def _run(self, key: Key, delivery: PushDelivery) -> None:
        log_context.note_task(key[0])  # (the worker's JSON log lines name its task)
        held = self._held[key] = _Held(
            delivery.cursor, delivery.failures, delivery.last_error, delivery.next_attempt_ms
        )
        try:
            await self._deliver(key, delivery, held)
        except asyncio.CancelledError:
            raise
        except Exception:
            # The lease runs out and a later claim resumes from the durable cursor.
            log.exception("push delivery for task %s, config %s broke", key[0], key[1])
        finally:
            del self._workers[key]
            if self._running:
                self._held.pop(key, None)  # broke: its lease runs out (stop() gives it back)
            handoff = self._handoff.pop(key, None)
            if handoff is not None and self._running:
                if handoff.cursor < held.cursor:  # claimed before this worker's last update
                    handoff = dataclasses.replace(handoff, cursor=held.cursor, failures=0)
                self._start(handoff)
            elif key in self._again:
                self._again.discard(key)
                self._wake(key[0])

    async def _deliver(self, key: Key, delivery: PushDelivery, held: _Held) -> None:
        task_id, config_id = key
        config = delivery.config.config
        cursor, failures = delivery.cursor, delivery.failures
        store = self.store
        while True:
            self._again.discard(key)
            events = await store.read_events(task_id, cursor, self.settings.batch)
            if not events:
                record = await store.get_task(task_id, None)
                if record is None:
                    return  # the task is gone, and its configs with it
                if record.seq > cursor or key in self._again:
                    continue
                done = lifecycle.is_terminal(record.state)
                self._held.pop(key, None)
                await store.update_push_delivery(
                    task_id,
                    config_id,
                    cursor=cursor,
                    state="done" if done else "active",
                    failures=0,
                    last_error="",
                    next_attempt_ms=0,
                )
                if done and not any(k[0] == task_id for k in self._workers if k != key):
                    self._watched.pop(task_id, None)
                return
            for event in events:
                if not event.streamed:
                    cursor = event.seq  # history only; recorded with the next update
                    continue
                if not await self._acquire_slot(key, held):
                    return  # the config was deleted
                try:
                    error = await self._attempt(config, event)
                finally:
                    self._slots.release()
                if error is None:
                    cursor, failures = event.seq, 0
                    lease_until = self.clock() + self.settings.lease_ms
                    if not await store.update_push_delivery(
                        task_id,
                        config_id,
                        cursor=cursor,
                        state="active",
                        failures=0,
                        last_error="",
                        next_attempt_ms=lease_until,
                    ):
                        return  # the config was deleted
                    held.cursor, held.failures, held.last_error = cursor, 0, ""
                    held.lease_until = lease_until
                    continue
                self._held.pop(key, None)
                await self._failed(key, config, cursor, failures + 1, error)
                return

    async def _acquire_slot(self, key: Key, held: _Held) -> bool:
        """Wait for one of the ``concurrency`` posting slots, keeping the claim alive meanwhile
        (when every slot is busy the wait can outlast a lease). False when the config no
        longer exists (no slot is then held)."""
        while True:
            if not await self._keep_lease(key, held):
                return False
            try:
                async with asyncio.timeout(self.settings.lease_ms / 3000):
                    await self._slots.acquire()
            except TimeoutError:
                continue
            return True

    async def _keep_lease(self, key: Key, held: _Held) -> bool:
        """Renew the claim unless it surely outlasts the coming attempt."""
        now = self.clock()
        if now + int(self.settings.timeout_s * 1000) + 1000 <= held.lease_until:
            return True
        held.lease_until = now + self.settings.lease_ms
        return await self.store.update_push_delivery(
            key[0],
            key[1],
            cursor=held.cursor,
            state="active",
            failures=held.failures,
            last_error=held.last_error,
            next_attempt_ms=held.lease_until,
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

    async def _failed(
        self,
        key: Key,
        config: TaskPushNotificationConfig,
        cursor: int,
        failures: int,
        error: DeliveryError,
    ) -> None:
        task_id, config_id = key
        origin = loggable_origin(config.url)
        # Messages are written to be free of secrets; an HTTP library's text might not be.
        text = scrub(str(error), config)
        if error.permanent or failures >= self.settings.max_attempts:
            self.stats.gave_up += 1
            await self.store.update_push_delivery(
                task_id,
                config_id,
                cursor=cursor,
                state="failing",
                failures=failures,
                last_error=text,
                next_attempt_ms=0,
            )
            log.warning(
                "push config %s of task %s (%s) is failing after %d attempt(s): %s; delivery "
                "stopped after event %d (re-create the config to resume)",
                config_id,
                task_id,
                origin,
                failures,
                text,
                cursor,
            )
            return
        delay_s = self.backoff_s(failures)
        await self.store.update_push_delivery(
            task_id,
            config_id,
            cursor=cursor,
            state="active",
            failures=failures,
            last_error=text,
            next_attempt_ms=self.clock() + int(delay_s * 1000),
        )
        log.info(
            "push config %s of task %s (%s): attempt %d failed (%s); retrying in %.1f s",
            config_id,
            task_id,
            origin,
            failures,
            text,
            delay_s,
        )
        if self._running:
            loop = asyncio.get_running_loop()
            old = self._timers.pop(key, None)
            if old is not None:
                old.cancel()
            # A little late rather than early: the claim wants next_attempt_ms reached.
            self._timers[key] = loop.call_later(delay_s + 0.01, self._retry_due, key)

    def _retry_due(self, key: Key) -> None:
        self._timers.pop(key, None)
        self._wake(key[0])

    def backoff_s(self, failures: int) -> float:
        settings = self.settings
        return backoff_s(failures, settings.retry_base_s, settings.retry_max_s, self.jitter())


def backoff_s(failures: int, base_s: float, max_s: float, jitter: float) -> float:
    """The wait before retrying after ``failures`` failures in a row: exponential from
    ``base_s``, capped at ``max_s``, times ``0.5 + 0.5 * jitter`` (``jitter`` in [0, 1]: a
    random draw, so that retries do not synchronise)."""
    ceiling = min(max_s, base_s * 2.0 ** (failures - 1))
    return ceiling * (0.5 + 0.5 * jitter)


__all__ = ["PushDispatcher", "PushSettings", "event_id"]
