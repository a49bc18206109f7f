"""Run an ASGI app on accord's HTTP/1.1 front (accord.server._h1): the lifespan, the listening
socket, SIGINT/SIGTERM, and a graceful stop.

Stopping: the socket stops accepting, idle keep-alive connections close at once, responses in
progress get ``grace_s`` seconds to finish (a stream that is still open then is cut: its
client sees the connection end, and resumes elsewhere with Last-Event-ID), and only then does
the app's lifespan shutdown run (for accord: the engine stops and the store closes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Callable, MutableMapping
from typing import Any

from accord.errors import AccordError
from accord.server._h1 import ASGIApp, Connection, Connections, Limits
from accord.server._listen import bind, host_port

log = logging.getLogger("accord.server")


class StartupFailed(AccordError):
    """The app's lifespan startup reported a failure (or crashed)."""


class Lifespan:
    """Drives the ASGI lifespan protocol of one app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._inbox: asyncio.Queue[MutableMapping[str, Any]] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        self._started: asyncio.Future[None] = loop.create_future()
        self._stopped: asyncio.Future[None] = loop.create_future()
        self._task: asyncio.Task[None] | None = None

    async def startup(self) -> None:
        self._task = asyncio.ensure_future(self._main())
        await self._inbox.put({"type": "lifespan.startup"})
        await self._started

    async def shutdown(self, timeout_s: float = 30.0) -> None:
        if self._task is None or self._task.done():
            return
        await self._inbox.put({"type": "lifespan.shutdown"})
        try:
            await asyncio.wait_for(asyncio.shield(self._stopped), timeout_s)
        except (TimeoutError, StartupFailed) as exc:
            log.error("application shutdown did not complete: %s", exc)

    async def _main(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}
        try:
            await self.app(scope, self._inbox.get, self._send)
        except Exception as exc:
            log.exception("the application's lifespan failed")
            self._settle(self._started, StartupFailed(str(exc)))
        finally:
            self._settle(self._stopped, None)
            self._settle(self._started, StartupFailed("the application ended its lifespan"))

    async def _send(self, message: MutableMapping[str, Any]) -> None:
        kind = message["type"]
        if kind == "lifespan.startup.complete":
            self._settle(self._started, None)
        elif kind == "lifespan.startup.failed":
            self._settle(self._started, StartupFailed(message.get("message", "")))
        elif kind in ("lifespan.shutdown.complete", "lifespan.shutdown.failed"):
            if kind.endswith("failed"):
                log.error("application shutdown failed: %s", message.get("message", ""))
            self._settle(self._stopped, None)

    @staticmethod
    def _settle(future: asyncio.Future[None], outcome: BaseException | None) -> None:
        if future.done():
            return
        if outcome is None:
            future.set_result(None)
        else:
            future.set_exception(outcome)
            future.exception()  # retrieved: whoever awaits it sees it; nobody else must


async def serve(
    app: ASGIApp,
    host: str,
    port: int,
    *,
    limits: Limits | None = None,
    grace_s: float = 5.0,
    stop: asyncio.Event | None = None,
    on_listening: Callable[[int], None] | None = None,
    sockets: list[socket.socket] | None = None,
) -> None:
    """Serve ``app`` until ``stop`` is set or the process gets SIGINT/SIGTERM.

    ``sockets``: already bound sockets to listen on (``accord.server._listen.bind``); without
    them ``host`` and ``port`` are bound here. Either way the port is bound before the app
    starts, so a busy port (:class:`~accord.server._listen.ListenError`) starts nothing."""
    loop = asyncio.get_running_loop()
    limits = limits or Limits()
    if sockets is None:
        sockets = bind(host, port, "HTTP")
    lifespan = Lifespan(app)
    try:
        await lifespan.startup()
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    connections = Connections()
    servers: list[asyncio.Server] = []
    try:
        for sock in sockets:
            servers.append(
                await loop.create_server(
                    lambda: Connection(app, limits, connections), sock=sock, backlog=2048
                )
            )
    except OSError:
        for server in servers:
            server.close()
        for sock in sockets:
            sock.close()
        await lifespan.shutdown()
        raise
    bound = sockets[0].getsockname()[1]
    log.info("listening on http://%s", host_port(host, bound))
    if on_listening is not None:
        on_listening(bound)
    stop = stop or asyncio.Event()
    handled: list[signal.Signals] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
            handled.append(signum)
    try:
        await stop.wait()
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
        log.info("stopping: letting responses in progress finish (up to %.0f s)", grace_s)
        for server in servers:
            server.close()
        await _drain(connections, grace_s)
        await lifespan.shutdown()


async def _drain(connections: set[Connection], grace_s: float) -> None:
    for conn in list(connections):
        conn.draining = True
        conn.close_if_idle()
    deadline = asyncio.get_running_loop().time() + grace_s
    while connections and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    for conn in list(connections):
        conn.close()
    await asyncio.sleep(0)  # let the app see the disconnects before its shutdown


def run(app: ASGIApp, host: str, port: int, **options: Any) -> None:
    """Run :func:`serve` on uvloop (asyncio's loop where uvloop is not available). Exits with
    status 3 when the app fails to start."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency where it builds
        runner: Any = asyncio.run
    else:
        runner = uvloop.run
    try:
        runner(serve(app, host, port, **options))
    except StartupFailed as exc:
        log.error("the application failed to start: %s", exc)
        sys.exit(3)
