"""Delivering channel messages to agent participants: the durable outbox drained to their
A2A endpoints.

Nothing is queued in memory that is not also in the store (accord.harness.channels._outbox_store):

- **following**: every message the harness stores for agent participants names them
  (``accord.harness/deliver_to``: its help requests and messages, and the relays of the
  participants' messages the hooks let through); the dispatcher reads the store's global
  feed — written in the appending transaction itself — and adds a row per (message,
  recipient), moving its feed position in the same transaction. It reads right away when
  anything commits in this process, every ``poll_interval_s`` for what other nodes commit,
  and on start for what a crash left unread;
- **delivering**: the rows are the jobs of a durable worker (accord.push._worker), which
  claims due rows (a lease, so no other node sends the same row at the
  same time), in message order per (task, recipient), and sends each as a SendMessage to
  the recipient's own A2A endpoint through accord's client, with the roster's credentials
  (``returnImmediately``: the recipient works on it in its own time). The delivered message
  keeps one id across every attempt, so an accord recipient takes it once even when an
  attempt's answer was lost (its safe retries);
- **retrying**: a failed attempt is retried with exponential backoff and jitter; after
  ``max_attempts`` failures the row is ``failing`` (logged, without secrets) and the
  recipient's next messages go on.

The message a recipient gets: the parts of the message that names it (the harness's own
message, or a participant's message's relay: who said what, then the message's parts), its
id (e.g. ``<task>:help:7``: a ``help_reply`` answers that id; a relay's
``<task>:channel:<seq>``), and in its metadata the task to answer
on (``accord.harness/task``) and, when the harness has no credentials for the recipient, its
own participant id (``participant_id``, as tiny-harness servers in open mode read it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from accord import config as check
from accord.client import ClientError
from accord.config import ConfigError
from accord.core import Event
from accord.harness._roster import Roster, RosterAgent
from accord.harness._wire import PARTICIPANT_METADATA
from accord.harness.channels._judge import DELIVER_KEY
from accord.harness.channels._outbox_store import ChannelOutbox, Delivery, Owed
from accord.push import DurableWorker, Failure, WorkerSettings, now_ms
from accord.store import FeedEntry, TaskStore
from accord.wire import Message, Role, TaskStatusUpdateEvent

log = logging.getLogger("accord.harness.channels")

# Message metadata of a delivered message: the task on the sender's harness to answer on.
TASK_REF_KEY = "accord.harness/task"
KEEP_DELIVERED_MS = 86_400_000  # delivered rows are forgotten after a day
FORGET_EVERY_MS = 600_000
FEED_BATCH = 256
SAVE_EVERY = 4096  # feed entries read with nothing owed before the position is stored


@dataclass(frozen=True, slots=True)
class DeliverySettings:
    timeout_s: float = 10.0  # one attempt, from the card to the answer
    max_attempts: int = 20  # failed attempts before a row is given up (failing)
    retry_base_s: float = 1.0  # the first retry after about this long, doubling each time
    retry_max_s: float = 300.0
    poll_interval_s: float = 5.0  # reading other nodes' messages, and retries due
    concurrency: int = 16  # deliveries in flight at once

    @property
    def lease_ms(self) -> int:
        return int(max(3 * self.timeout_s, 1.0) * 1000)


DELIVERY_KNOWN = ("timeout_s", "max_attempts", "retry_base_s", "retry_max_s", "poll_interval_s")


def parse_delivery(value: Any, where: str) -> DeliverySettings:
    """The ``[harness.delivery]`` table; ConfigError naming the setting."""
    fields = check.table(value, where, DELIVERY_KNOWN)
    read: dict[str, Any] = {}
    for key in DELIVERY_KNOWN:
        if key not in fields:
            continue
        if key == "max_attempts":
            read[key] = check.integer(fields[key], f"{where}.{key}")
            if read[key] < 1:
                raise ConfigError(f"{where}.{key}: at least 1")
        else:
            read[key] = check.number(fields[key], f"{where}.{key}")
            if read[key] <= 0:
                raise ConfigError(f"{where}.{key}: must be more than 0")
    return dataclasses.replace(DeliverySettings(), **read)


class ChannelDispatcher:
    """Follows the feed into the outbox, and drains it: its rows are the jobs of a
    :class:`~accord.push._worker.DurableWorker`, one attempt each."""

    chained = True  # (a recipient's next message is due once this one is delivered)

    def __init__(
        self,
        tasks: TaskStore,
        outbox: ChannelOutbox,
        roster: Roster,
        agent_id: str,
        settings: DeliverySettings | None = None,
        *,
        clock: Callable[[], int] = now_ms,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.tasks = tasks
        self.outbox = outbox
        self.roster = roster
        self.agent_id = agent_id
        self.settings = settings = settings or DeliverySettings()
        self.clock = clock
        self.worker: DurableWorker[Delivery] = DurableWorker(
            self,
            WorkerSettings.of(settings, max_running=settings.concurrency),
            name="channel delivery",
            log=log,
            clock=clock,
            sleep=sleep,
            jitter=jitter,
        )
        # Where this process has read the feed to, and what of it is stored: the position is
        # written with the rows it owes, or every SAVE_EVERY entries (after a restart the
        # entries read since are read again: their rows are there already, or added then).
        self._position: int | None = None
        self._saved = 0
        self._forget_at = 0

    # --- life ----------------------------------------------------------------------------

    def committed(self, task_id: str) -> None:
        """Something committed in this process (the engine's commit listener)."""
        self.worker.ring()

    async def start(self) -> None:
        await self.worker.start()  # (what a crash left: read and delivered at once)

    async def stop(self) -> None:
        await self.worker.stop()
        await self.roster.aclose()

    # --- following the feed --------------------------------------------------------------

    async def follow(self) -> None:
        """Rows for every message the feed shows after the position, the position moved
        (stored with the rows; other nodes may have read further: their position counts)."""
        stored = await self.outbox.position()
        position = max(self._position or 0, stored)
        self._saved = max(self._saved, stored)
        while entries := await self.tasks.read_feed(position, None, FEED_BATCH):
            owed = [item for entry in entries for item in _owed(entry)]
            position = entries[-1].position
            if owed or position - self._saved >= SAVE_EVERY:
                await self.outbox.add(owed, position)
                self._saved = position
            self._position = position
            if len(entries) < FEED_BATCH:
                return

    # --- the jobs: the outbox's rows -----------------------------------------------------

    def key(self, job: Delivery) -> tuple[str, str, int]:
        return (job.task_id, job.recipient, job.seq)

    def scope(self, job: Delivery) -> None:
        return None  # (claims are not by task: every ring claims whatever is due)

    def failures(self, job: Delivery) -> int:
        return job.failures

    async def claim(
        self, now_ms: int, lease_ms: int, limit: int, scope: str | None
    ) -> list[Delivery]:
        """What is due, once the feed is followed into the outbox (and, now and then,
        delivered rows of long ago forgotten)."""
        await self.follow()
        if self.clock() >= self._forget_at:
            self._forget_at = self.clock() + FORGET_EVERY_MS
            await self.outbox.forget_delivered(self.clock() - KEEP_DELIVERED_MS)
        return await self.outbox.claim(now_ms, lease_ms, limit)

    def resumed(self, claimed: Delivery, previous: Delivery) -> Delivery:
        return claimed

    async def release(self, job: Delivery) -> None:
        """Nothing: a stopped attempt's row is claimed again once its lease runs out."""

    async def run(self, job: Delivery) -> Failure | None:
        try:
            error = await self._attempt(job)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug: retried like any failure, and logged
            log.exception("channel delivery to %s broke", job.recipient)
            error = f"unexpected {type(exc).__name__}"
        if error is None:
            await self.outbox.delivered(job.task_id, job.recipient, job.seq, self.clock())
            return None
        return Failure(error)

    async def _attempt(self, delivery: Delivery) -> str | None:
        """One attempt: None when the recipient took the message, else why not."""
        agent = self.roster.get(delivery.recipient)
        if agent is None:  # (the roster changed since the message was sent)
            return f"{delivery.recipient!r} is not on the agent roster"
        events = await self.tasks.read_events(delivery.task_id, delivery.seq - 1, 1)
        message = outgoing(events[0], agent, self.agent_id) if events else None
        if message is None:  # the task is gone (retention): nothing left to deliver
            return None
        try:
            async with self.roster.connect(delivery.recipient) as client:
                await client.send(message, return_immediately=True)
        except (ClientError, OSError, RuntimeError) as exc:
            return described(exc)
        log.debug("delivered %s to %s", message.message_id, delivery.recipient)
        return None

    async def give_up(self, job: Delivery, failures: int, failure: Failure) -> None:
        task_id, recipient, seq = job.task_id, job.recipient, job.seq
        await self.outbox.failed(
            task_id, recipient, seq, failures=failures, error=failure.error, retry_at_ms=None
        )
        log.warning(
            "channel message %s:%d to %s is failing after %d attempt(s): %s; "
            "delivery given up",
            task_id, seq, recipient, failures, failure.error,
        )  # fmt: skip

    async def retry(
        self, job: Delivery, failures: int, failure: Failure, delay_s: float, at_ms: int
    ) -> None:
        task_id, recipient, seq = job.task_id, job.recipient, job.seq
        await self.outbox.failed(
            task_id, recipient, seq, failures=failures, error=failure.error, retry_at_ms=at_ms
        )
        log.info(
            "channel message %s:%d to %s: attempt %d failed (%s); retrying in %.1f s",
            task_id, seq, recipient, failures, failure.error, delay_s,
        )  # fmt: skip


def _owed(entry: FeedEntry) -> list[Owed]:
    """The deliveries an entry of the feed asks for."""
    owed = []
    for event in entry.events:
        message = carried(event)
        if message is None or not isinstance(message.metadata, dict):
            continue
        recipients = message.metadata.get(DELIVER_KEY)
        if isinstance(recipients, list):
            for recipient in recipients:
                if isinstance(recipient, str):
                    owed.append(Owed(entry.tenant, entry.task_id, recipient, event.seq))
    return owed


def carried(event: Event) -> Message | None:
    """The message an event carries: a participant's message, or a status message."""
    body = event.body
    if isinstance(body, Message):
        return body
    if isinstance(body, TaskStatusUpdateEvent) and isinstance(body.status.message, Message):
        return body.status.message
    return None


def outgoing(event: Event, agent: RosterAgent, agent_id: str) -> Message | None:
    """The message ``agent`` gets for the channel message ``event`` carries (None: it
    carries none); ``agent_id`` is the harness's own participant id."""
    message = carried(event)
    if message is None:
        return None
    harness_made = message.role is Role.AGENT
    metadata: dict[str, object] = {TASK_REF_KEY: event.task_id}
    if agent.credentials.kind == "none":
        metadata[PARTICIPANT_METADATA] = agent_id
    return Message(
        message_id=message.message_id if harness_made else f"{event.task_id}:{event.seq}",
        role=Role.USER,
        parts=list(message.parts),
        metadata=metadata,
    )


def described(exc: BaseException) -> str:
    """A failure in a line, free of secrets (an error's text from the client names no
    credential; the class says what went wrong)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__
