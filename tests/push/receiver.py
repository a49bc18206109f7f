"""A real webhook receiver for tests: a small HTTP/1.1 server on loopback (asyncio streams),
recording every request and answering what the test's policy says."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def event_id(self) -> str:
        return self.headers.get("x-a2a-event-id", "")


# (request, how many requests came before it) -> HTTP status, possibly after a wait.
Policy = Callable[[Received, int], int | Awaitable[int]]


class Receiver:
    def __init__(self, policy: Policy | None = None) -> None:
        self.policy: Policy = policy or (lambda request, index: 200)
        self.received: list[Received] = []  # every request, in arrival order
        self.accepted: list[Received] = []  # the ones answered 2xx
        self._changed = asyncio.Condition()
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None) -> Receiver:
        self._server = await asyncio.start_server(self._serve, host, 0, ssl=tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def url(self, path: str = "/webhook", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> Receiver:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def wait_for(self, done: Callable[[Receiver], bool], timeout: float = 20.0) -> None:
        """Until ``done(self)`` holds; fails the test after ``timeout`` seconds."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: done(self))

    def accepted_ids(self) -> list[str]:
        """Event ids of accepted notifications, deduplicated, in first-arrival order."""
        return list(dict.fromkeys(r.event_id for r in self.accepted))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                index = len(self.received)
                self.received.append(request)
                status = self.policy(request, index)
                if inspect.isawaitable(status):
                    status = await status
                assert isinstance(status, int)
                if 200 <= status < 300:
                    self.accepted.append(request)
                async with self._changed:
                    self._changed.notify_all()
                writer.write(f"HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n".encode())
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the peer went away, or the receiver is closing
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def _read_request(reader: asyncio.StreamReader) -> Received | None:
    line = await reader.readline()
    if not line:
        return None
    method, path, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Received(method, path, headers, body)
