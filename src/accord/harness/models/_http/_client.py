"""accord's HTTP/1.1 client for model calls: a POST of a JSON body, its answer read as it
streams, over a pool of kept-alive connections to one origin.

- **The pool**: at most ``max_connections`` open at once (a call past them waits for one to
  come free, within the call's timeout); an idle connection is kept ``idle_s``, the most
  recently used taken first. A call sent on a kept connection that the server had closed
  meanwhile is sent again, once, on a fresh one — only when not one byte of its answer came.
- **Timeouts**: ``connect_timeout_s`` to open a connection (TLS and a proxy's tunnel
  included); ``timeout_s``, the longest wait for anything of the answer (its head, then each
  piece of its body), as the providers' packages count a read timeout. One timer per
  connection watches it, not one per read.
- **TLS** with ``ssl.create_default_context()`` (the system's CAs, SNI, verification on)
  unless a context is given; **proxies** from the environment (accord.harness.models._http._proxy),
  tunnelled with ``CONNECT``.
- **Bounds** on the answer's head (accord.harness.models._http._response); an error status
  (400 and above) is raised as :class:`StatusError` with the start of its body.

Every failure is an :class:`HTTPError` (accord's error tree); an OS error is chained as the
cause of :class:`ConnectFailed`, so that the adapters can say "connection refused".
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import msgspec

from accord.harness.models._http._connection import Body, Connection, Response
from accord.harness.models._http._errors import (
    BrokenAnswer,
    ConnectFailed,
    HTTPError,
    StatusError,
    TimedOut,
)
from accord.harness.models._http._proxy import proxy_for
from accord.harness.models._http._response import Limits, ResponseReader

_json = msgspec.json.Encoder().encode
INLINE_BODY = 64 * 1024  # a body up to this size goes out in one write with its head


class HttpClient:
    """A pool of connections to the origin of ``base_url``, for POSTs of JSON to paths under
    it; ``headers`` go with every request (the key). UnsupportedProxy when the environment
    names a proxy that is not http://."""

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str] | None = None,
        *,
        timeout_s: float = 120.0,
        connect_timeout_s: float = 10.0,
        max_connections: int = 1000,
        idle_s: float = 30.0,
        limits: Limits | None = None,
        ssl_context: ssl.SSLContext | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http:// or https:// URL: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.host = parts.hostname
        standard_port = 443 if parts.scheme == "https" else 80
        self.port = parts.port or standard_port
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.max_connections = max_connections
        self.idle_s = idle_s
        self.limits = limits or Limits()
        self.proxy = proxy_for(
            parts.scheme, self.host, self.port, os.environ if environ is None else environ
        )
        self._ssl: ssl.SSLContext | None = None
        if parts.scheme == "https":
            self._ssl = ssl_context or ssl.create_default_context()
        self._prefix = parts.path.rstrip("/")
        self._query = f"?{parts.query}" if parts.query else ""  # (kept after every path)
        host = f"[{self.host}]" if ":" in self.host else self.host
        fixed = {
            "Host": host if self.port == standard_port else f"{host}:{self.port}",
            "User-Agent": "accord",
            "Accept": "application/json",
            "Accept-Encoding": "identity",
            "Content-Type": "application/json",
            **(headers or {}),
        }
        for name, value in fixed.items():
            if not f"{name}{value}".isprintable():  # (CR, LF and NUL among what is not)
                raise ValueError(f"the header {name} has a character HTTP cannot send")
        self.headers = fixed  # (sent with every request)
        try:
            self._fixed = "".join(f"{name}: {value}\r\n" for name, value in fixed.items()).encode(
                "latin-1"
            )
        except UnicodeEncodeError:
            raise ValueError("a header has a character HTTP cannot send (not Latin-1)") from None
        self._idle: deque[Connection] = deque()
        self._waiters: deque[asyncio.Future[Connection | None]] = deque()
        self._open = 0
        self._sweep: asyncio.TimerHandle | None = None
        self._closed = False

    # --- a call --------------------------------------------------------------------------

    def post_json(self, path: str, body: Any) -> AbstractAsyncContextManager[Response]:
        """:meth:`stream` of ``body`` encoded as JSON (msgspec)."""
        return self.stream(path, _json(body))

    @asynccontextmanager
    async def stream(self, path: str, body: bytes) -> AsyncIterator[Response]:
        """POSTs ``body`` (JSON) to ``path`` (under the base URL's path); the answer whose
        head came, its body to read within the block. StatusError for a status of 400 and
        above; the connection goes back to the pool if its answer was read whole."""
        connection, response = await self._exchange(path, body)
        try:
            yield response
        finally:
            self._release(connection)

    async def _exchange(self, path: str, body: bytes) -> tuple[Connection, Response]:
        head = (
            b"POST "
            + (self._prefix + path + self._query).encode("latin-1")
            + b" HTTP/1.1\r\n"
            + self._fixed
            + b"Content-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
        )
        for attempt in (0, 1):
            connection, reused = await self._acquire(fresh=attempt > 0)
            reader = ResponseReader(self.limits)
            connection.begin(reader)
            try:
                transport = connection.transport
                assert transport is not None
                if len(body) <= INLINE_BODY:
                    transport.write(head + body)
                else:
                    transport.writelines((head, body))
                while not reader.head_done:
                    if connection.error is not None:
                        raise connection.error
                    if connection.eof:
                        reader.end()
                    if connection.timed_out:
                        raise TimedOut(
                            f"the endpoint did not answer within {self.timeout_s:g} s",
                            stalled=False,
                        )
                    await connection.wait()
            except (BrokenAnswer, OSError) as exc:
                self._discard(connection)
                if reused and attempt == 0 and connection.received == 0:
                    continue  # (a kept connection the server had closed: once on a fresh one)
                if isinstance(exc, OSError):
                    raise BrokenAnswer(f"the connection failed: {exc}") from exc
                raise
            except BaseException:
                self._discard(connection)
                raise
            if reader.status >= 400:
                await self._refusal(connection, reader)
            return connection, Response(connection, reader)
        raise AssertionError("unreachable: the second attempt returns or raises")

    async def _refusal(self, connection: Connection, reader: ResponseReader) -> None:
        """Raises the StatusError of an error answer, with the start of its body."""
        try:
            body = b""
            async with asyncio.timeout(self.timeout_s):
                async for data in Body(connection):
                    body += data
                    if len(body) >= self.limits.max_error_body:
                        break
        except (HTTPError, TimeoutError):
            pass  # (the status says enough)
        finally:
            self._release(connection)
        raise StatusError(reader.status, reader.headers, body[: self.limits.max_error_body])

    # --- the pool ------------------------------------------------------------------------

    async def _acquire(self, *, fresh: bool = False) -> tuple[Connection, bool]:
        """A connection: a kept one (True; not when ``fresh``), else a new one, else the
        first to come free."""
        if self._closed:
            raise HTTPError("the model's HTTP client is closed")
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            while self._idle and not fresh:
                connection = self._idle.pop()
                if (
                    not (connection.closed or connection.eof)
                    and now - connection.idle_since < self.idle_s
                    and connection.loop is loop  # (a client outliving a loop: tests)
                ):
                    return connection, True
                self._discard(connection)
            if self._open < self.max_connections:
                self._open += 1
                try:
                    return await self._connect(loop), False
                except BaseException:
                    self._open -= 1
                    self._hand_on(None)
                    raise
            waiter: asyncio.Future[Connection | None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout(self.timeout_s):
                    given = await waiter
            except BaseException as exc:
                if waiter.done() and not waiter.cancelled():  # (given as it gave up: pass it on)
                    handed = waiter.result()
                    if handed is not None:
                        self._release(handed)
                    else:  # (the right to open one goes to the next who waits)
                        self._hand_on(None)
                if isinstance(exc, TimeoutError):
                    raise TimedOut(
                        f"no connection to {self.origin} came free within {self.timeout_s:g} s "
                        f"({self.max_connections} open)",
                        stalled=False,
                    ) from None
                raise
            if given is not None:
                return given, True

    def _hand_on(self, connection: Connection | None) -> bool:
        """Gives a kept connection (or, None, the right to open one) to the first caller
        waiting; False when none waits."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return True
        return False

    def _release(self, connection: Connection) -> None:
        """Back to the pool when its answer was read whole and it may serve another."""
        connection.cancel_timer()
        if not connection.reusable() or self._closed:
            self._discard(connection)
            return
        connection.reader = None
        connection.idle_since = asyncio.get_running_loop().time()
        if self._hand_on(connection):
            return
        self._idle.append(connection)
        if self._sweep is None:
            self._sweep = asyncio.get_running_loop().call_later(self.idle_s, self._sweep_idle)

    def _discard(self, connection: Connection) -> None:
        if connection.counted:
            connection.counted = False
            self._open -= 1
            connection.close()
            self._hand_on(None)

    def _sweep_idle(self) -> None:
        """Closes the connections idle for ``idle_s``."""
        self._sweep = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        kept: deque[Connection] = deque()
        for connection in self._idle:
            if connection.closed or now - connection.idle_since >= self.idle_s:
                self._discard(connection)
            else:
                kept.append(connection)
        self._idle = kept
        if kept:
            due = min(c.idle_since for c in kept) + self.idle_s
            self._sweep = loop.call_at(due, self._sweep_idle)

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> Connection:
        """A new connection: TCP (through the proxy's tunnel), then TLS for https."""
        proxy = self.proxy
        where = f"{self.origin} through the proxy {proxy.origin}" if proxy else self.origin
        protocol: Any = None
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                if proxy is None:
                    _, protocol = await loop.create_connection(
                        lambda: Connection(loop, self.timeout_s),
                        self.host,
                        self.port,
                        ssl=self._ssl,
                        server_hostname=self.host if self._ssl else None,
                    )
                else:
                    _, protocol = await loop.create_connection(
                        lambda: Connection(loop, self.timeout_s), proxy.host, proxy.port
                    )
                    await protocol.tunnel(self.host, self.port, proxy)
                    if self._ssl is not None:
                        protocol.transport = await loop.start_tls(
                            protocol.transport, protocol, self._ssl, server_hostname=self.host
                        )
        except TimeoutError as exc:
            if protocol is not None:
                protocol.close()
            raise ConnectFailed(
                f"cannot connect to {where}: no connection within {self.connect_timeout_s:g} s"
            ) from exc
        except ConnectFailed:
            protocol.close()
            raise
        except OSError as exc:  # (refused, unresolved, TLS: ssl.SSLError is an OSError)
            if protocol is not None:
                protocol.close()
            raise ConnectFailed(f"cannot connect to {where}: {exc}") from exc
        assert isinstance(protocol, Connection)
        return protocol

    async def aclose(self) -> None:
        """Closes every kept connection; a call after this fails."""
        self._closed = True
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        while self._idle:
            self._discard(self._idle.pop())
        self._hand_on(None)
