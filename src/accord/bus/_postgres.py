"""The cluster bus: PostgreSQL LISTEN/NOTIFY, so a follower on any node wakes when any node
appends to the log it follows.

Like :class:`LocalBus` it carries no events, only "task X has something new". ``notify``
wakes this process's subscribers at once and publishes ``NOTIFY accord_tasks, '<node>
<task id>'`` for the other nodes; a listener connection turns their notifications into local
wake-ups (its own echo is ignored). Publishing is batched: the ids notified while one NOTIFY
round trip is in flight go out together in the next one.

Nothing is lost when a notification is (a node died between its commit and its NOTIFY, the
listener connection dropped): every ``catch_up_s`` seconds, and whenever the listener
(re)connects, every local subscriber is woken and re-reads the log from its own cursor. The
common path never polls.

NOTIFY runs in its own transaction on a dedicated connection with ``synchronous_commit=off``:
a notification is not data (the log is), so it need not wait for a disk flush, and keeping
it out of the append transaction keeps PostgreSQL's global notify lock out of the appends'
commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import asyncpg

from accord.bus._local import LocalBus
from accord.telemetry import BusStats

log = logging.getLogger("accord.bus")

CHANNEL = "accord_tasks"
_RECONNECT_S = 1.0


# The application_name of a node's LISTEN connection: how the database tells the nodes apart.
NODE_PREFIX = "accord node "


class PostgresBus(LocalBus):
    """A :class:`LocalBus` whose notifications also reach every other node on the database.

    ``start()`` opens the two connections (listen, publish); ``close()`` ends them. Before
    ``start`` and after ``close`` it is a plain local bus.
    """

    def __init__(
        self, dsn: str, *, catch_up_s: float = 5.0, channel: str = CHANNEL, node: str = ""
    ) -> None:
        super().__init__()
        if catch_up_s <= 0:
            raise ValueError("catch_up_s must be positive")
        self.dsn = dsn
        self.catch_up_s = catch_up_s
        self.channel = channel
        self.node = node or uuid.uuid4().hex[:16]  # (the store's node id, when it made this)
        self._pending: dict[str, None] = {}  # task ids to publish, in notify order
        self._has_pending = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._remote_listeners: list[Callable[[str | None], None]] = []
        self._listener: asyncpg.Connection | None = None  # the LISTEN connection, while up
        self.stats = BusStats()  # NOTIFYs sent, notifications received, their lag

    @property
    def published(self) -> int:
        """NOTIFY statements sent (each carries a batch of ids)."""
        return self.stats.sent

    @property
    def received(self) -> int:
        """Notifications from other nodes."""
        return self.stats.received

    # --- the LocalBus interface ------------------------------------------------------------

    def notify(self, task_id: str) -> None:
        super().notify(task_id)
        if self._tasks:
            self._pending[task_id] = None
            self._has_pending.set()

    # --- life ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect; returns once this node listens (nothing notified after that is missed).
        Raises when the database cannot be reached."""
        if self._tasks:
            return
        first = await self._connect_listener()
        self._tasks = [
            asyncio.ensure_future(self._listen_loop(first)),
            asyncio.ensure_future(self._publish_loop()),
            asyncio.ensure_future(self._catch_up_loop()),
        ]

    async def close(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._pending.clear()

    async def __aenter__(self) -> PostgresBus:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def ping(self) -> None:
        """Raise when this node does not listen (its LISTEN connection is down or does not
        answer): other nodes' appends would then wake its followers only at catch-up."""
        if not self._tasks:
            return  # not started: a plain local bus
        listener = self._listener
        if listener is None or listener.is_closed():
            raise ConnectionError("the bus's LISTEN connection to PostgreSQL is down")
        await listener.fetchval("SELECT 1")

    def wake_all(self) -> None:
        """Wake every local subscriber (each re-reads its log)."""
        for subscriptions in list(self._subscribers.values()):
            for subscription in list(subscriptions):
                subscription.wake()

    def add_remote_listener(self, listener: Callable[[str | None], None]) -> None:
        """Call ``listener(task_id)`` when another node notifies ``task_id``, and
        ``listener(None)`` at every catch-up and (re)connection: anything may have changed
        elsewhere. For a node that must notice what other nodes do to the tasks it runs
        (a cancel); local notifications do not call it."""
        self._remote_listeners.append(listener)

    def _remote(self, task_id: str | None) -> None:
        for listener in self._remote_listeners:
            try:
                listener(task_id)
            except Exception:
                log.exception("bus: a remote listener failed")

    # --- loops -----------------------------------------------------------------------------

    async def _connect_listener(self) -> tuple[asyncpg.Connection, asyncio.Event]:
        lost = asyncio.Event()
        # Named after the node: the dashboard's Health page lists the cluster's nodes by it.
        conn = await asyncpg.connect(
            self.dsn, server_settings={"application_name": NODE_PREFIX + self.node}
        )
        conn.add_termination_listener(lambda _conn: lost.set())
        await conn.add_listener(self.channel, self._on_notification)
        self._listener = conn
        # Whatever was appended before we listened is found by re-reading the logs.
        self.wake_all()
        self._remote(None)
        return conn, lost

    async def _listen_loop(self, first: tuple[asyncpg.Connection, asyncio.Event]) -> None:
        current: tuple[asyncpg.Connection, asyncio.Event] | None = first
        while True:
            if current is None:
                try:
                    current = await self._connect_listener()
                except Exception as exc:
                    log.warning("bus: cannot listen (%s); retrying", exc)
                    await asyncio.sleep(_RECONNECT_S)
                    continue
            conn, lost = current
            try:
                await lost.wait()
                log.warning("bus: the listen connection was lost; reconnecting")
            finally:
                self._listener = None
                if not conn.is_closed():
                    conn.terminate()
            current = None

    def _on_notification(self, _conn: Any, _pid: int, _channel: str, payload: object) -> None:
        # '<node>@<ms> <task id>' (ms: the sender's clock when it published, for the lag);
        # a node of an older version sends '<node> <task id>'.
        sender, _, task_id = str(payload).partition(" ")
        node, _, sent_ms = sender.partition("@")
        if node != self.node:
            self.stats.received += 1
            if sent_ms.isdigit():
                self.stats.lag.observe(max(time.time() * 1000 - int(sent_ms), 0.0) / 1000)
            LocalBus.notify(self, task_id)
            self._remote(task_id)

    async def _publish_loop(self) -> None:
        conn: asyncpg.Connection | None = None
        try:
            while True:
                await self._has_pending.wait()
                if conn is None or conn.is_closed():
                    try:
                        conn = await asyncpg.connect(
                            self.dsn, server_settings={"synchronous_commit": "off"}
                        )
                    except Exception as exc:
                        log.warning("bus: cannot publish (%s); retrying", exc)
                        await asyncio.sleep(_RECONNECT_S)
                        continue
                self._has_pending.clear()
                sender = f"{self.node}@{time.time_ns() // 1_000_000}"
                batch = [f"{sender} {task_id}" for task_id in self._pending]
                self._pending.clear()
                try:
                    await conn.execute(
                        "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p",
                        self.channel,
                        batch,
                    )
                    self.stats.sent += 1
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    # Lost: the other nodes' catch-up finds these appends anyway.
                    log.warning("bus: NOTIFY failed (%s)", exc)
                    with contextlib.suppress(Exception):
                        conn.terminate()
                    conn = None
        finally:
            if conn is not None and not conn.is_closed():
                conn.terminate()

    async def _catch_up_loop(self) -> None:
        while True:
            await asyncio.sleep(self.catch_up_s)
            self.wake_all()
            self._remote(None)
