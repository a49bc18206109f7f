"""One connection of accord's model HTTP client, and the answer read on it: an asyncio
protocol that feeds what comes to the current answer's reader
(accord.harness.models._http._response), pauses reading past a high-water mark of unread
body, wakes the one caller waiting, and keeps one timer for the read timeout (not one per
read); a proxy's ``CONNECT`` tunnel opened on it; the answer's head and its body as an async
iterator of bytes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from accord.harness.models._http._errors import ConnectFailed, HTTPError, TimedOut
from accord.harness.models._http._proxy import Proxy
from accord.harness.models._http._response import ResponseReader

HIGH_WATER = 256 * 1024  # body bytes read and not yet taken before reading pauses
MAX_TUNNEL_HEAD = 16 * 1024  # a proxy's answer to CONNECT


class Connection(asyncio.Protocol):
    """One connection: bytes in to the current answer's reader, a waiter woken when
    something came (or the connection ended), one timer for the read timeout."""

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout_s: float) -> None:
        self.loop = loop
        self.timeout_s = timeout_s
        self.transport: asyncio.Transport | None = None
        self.reader: ResponseReader | None = None
        self.raw: bytearray | None = None  # a proxy's answer to CONNECT, while tunnelling
        self.received = 0  # bytes of the current answer
        self.error: HTTPError | None = None
        self.eof = False
        self.closed = False
        self.timed_out = False
        self.paused = False
        self.idle_since = 0.0
        self.counted = True  # (one of the pool's open connections, until discarded)
        self.last = 0.0  # when something last came, or a wait began
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    # --- asyncio's protocol --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.raw is not None:
            self.raw += data
            self._wake()
            return
        reader = self.reader
        if reader is None or reader.complete:  # (nothing was asked: the connection is spoilt)
            self.eof = True
            self.close()
            return
        self.received += len(data)
        self.last = self.loop.time()
        try:
            reader.feed(data)
        except HTTPError as exc:
            self.error = exc
            self.close()
        else:
            if reader.buffered > HIGH_WATER and not self.paused and self.transport is not None:
                self.paused = True
                self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = self.closed = True
        self.cancel_timer()
        self._wake()

    # --- what the client does with it ----------------------------------------------------

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        """Until something comes, the connection ends, or the read timeout passes."""
        if self.timed_out:
            return
        if self._timer is None:
            self.last = self.loop.time()
            self._timer = self.loop.call_at(self.last + self.timeout_s, self._check)
        self._waiter = waiter = self.loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def _check(self) -> None:
        self._timer = None
        if self._waiter is None:
            return  # (not waiting: the next wait starts the count again)
        due = self.last + self.timeout_s
        if self.loop.time() >= due - 0.001:
            self.timed_out = True
            self._wake()
        else:
            self._timer = self.loop.call_at(due, self._check)

    def cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def begin(self, reader: ResponseReader) -> None:
        self.reader = reader
        self.received = 0
        self.timed_out = False
        self.error = None

    def resume(self) -> None:
        if self.paused and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()

    def reusable(self) -> bool:
        reader = self.reader
        return (
            not self.closed
            and not self.eof
            and self.error is None
            and reader is not None
            and reader.complete
            and reader.keep_alive
        )

    def close(self) -> None:
        self.cancel_timer()
        if self.transport is not None and not self.closed:
            with contextlib.suppress(RuntimeError):  # (its loop is closed: nothing to close)
                self.transport.close()
        self.closed = True

    async def tunnel(self, host: str, port: int, proxy: Proxy) -> None:
        """Asks the proxy for a tunnel to ``host:port`` (ConnectFailed if it says no)."""
        assert self.transport is not None
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
        if proxy.authorization:
            head += f"Proxy-Authorization: {proxy.authorization}\r\n"
        self.raw = bytearray()
        self.transport.write(f"{head}\r\n".encode("latin-1"))
        while b"\r\n\r\n" not in self.raw:
            if self.eof or len(self.raw) > MAX_TUNNEL_HEAD:
                raise ConnectFailed(f"the proxy {proxy.origin} closed the tunnel to {target}")
            await self.wait()
            if self.timed_out:
                raise TimeoutError
        answer, _, rest = bytes(self.raw).partition(b"\r\n\r\n")
        self.raw = None
        status_line = answer.split(b"\r\n", 1)[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].startswith("2"):
            raise ConnectFailed(
                f"the proxy {proxy.origin} refused a tunnel to {target}: {status_line}"
            )
        if rest:
            raise ConnectFailed(f"the proxy {proxy.origin} sent bytes before the tunnel was up")
        self.cancel_timer()


class Response:
    """An answer whose head has come: ``status``, ``headers`` (lowercase names), and its body
    as it streams, from :meth:`iter_bytes`."""

    __slots__ = ("_connection", "headers", "status")

    def __init__(self, connection: Connection, reader: ResponseReader) -> None:
        self._connection = connection
        self.status = reader.status
        self.headers = reader.headers

    def iter_bytes(self) -> AsyncIterator[bytes]:
        return Body(self._connection)


class Body:
    """The body's bytes as they come; TimedOut when nothing came in time, BrokenAnswer when
    the connection ends before the body does."""

    __slots__ = ("_connection",)

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def __aiter__(self) -> Body:
        return self

    async def __anext__(self) -> bytes:
        connection = self._connection
        reader = connection.reader
        assert reader is not None
        while True:
            if reader.body:
                data = reader.take()
                if connection.paused:
                    connection.resume()
                return data
            if reader.complete:
                raise StopAsyncIteration
            if connection.error is not None:
                raise connection.error
            if connection.eof:
                reader.end()  # (whole if it was to end with the connection; else BrokenAnswer)
                continue
            if connection.timed_out:
                raise TimedOut(
                    f"nothing of the answer came within {connection.timeout_s:g} s", stalled=True
                )
            await connection.wait()
