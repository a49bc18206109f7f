"""accord's HTTP/1.1 front: one asyncio protocol per connection, speaking ASGI 3 to the app.

Why not uvicorn: on this code's hot paths (GetTask, a blocking SendMessage) the generic server
was about 40% of the event loop's CPU. This front does only what accord's bindings need:
keep-alive and pipelined requests in order, request bodies with flow control, fixed-length
and chunked responses with write back-pressure, ``http.disconnect`` when the peer goes, an
idle timeout (which also bounds a request head's arrival), bounded request heads, a request
body that must keep arriving (``Limits.body_timeout_s`` and ``body_min_rate``), and a cap on
open connections. Parsing is httptools (llhttp); what is left here is
the ASGI glue, kept to a few allocations per request.

Not supported, by design: WebSocket and h2c upgrades (the request is answered, then the
connection closes), TLS (terminate it in front, as for any Python app server).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, cast
from urllib.parse import unquote

import httptools

from accord.server._failures import log_unexpected

log = logging.getLogger("accord.server._http")

ASGIApp = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[MutableMapping[str, Any]]],
        Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ],
    Awaitable[None],
]


@dataclass(frozen=True, slots=True)
class Limits:
    max_head_bytes: int = 64 * 1024  # request line and headers together
    max_headers: int = 100
    body_buffer_bytes: int = 256 * 1024  # unread request body before reading pauses
    max_pipelined: int = 16  # parsed requests waiting behind the current one
    keep_alive_s: float = 5.0  # an idle connection (no request in progress) closes after this
    # A request body must keep coming: no pause of body_timeout_s, and once that long has
    # passed, at least body_min_rate bytes/s on average; else 408 and close. 0 turns either off.
    body_timeout_s: float = 20.0
    body_min_rate: int = 500
    max_connections: int = 1024  # beyond this many at once, a new one gets 503 and is closed


def _status_line(status: int) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    return f"HTTP/1.1 {status} {phrase}\r\n".encode("latin-1")


_STATUS_LINES = {status.value: _status_line(status.value) for status in HTTPStatus}
_ASGI = {"version": "3.0", "spec_version": "2.3"}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def _plain_response(status: int) -> bytes:
    body = HTTPStatus(status).phrase.encode()
    return (
        _STATUS_LINES[status]
        + b"content-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
        + b"content-length: %d\r\n\r\n" % len(body)
        + body
    )


class Cycle:
    """One request and its response: the ``receive`` and ``send`` the app is called with."""

    __slots__ = (
        "body",
        "body_size",
        "chunked",
        "complete",
        "conn",
        "continue_sent",
        "delivered",
        "expect_continue",
        "finished",
        "head",
        "keep_alive",
        "scope",
        "started",
        "waiter",
    )

    def __init__(
        self, conn: Connection, scope: MutableMapping[str, Any], keep_alive: bool, expect: bool
    ) -> None:
        self.conn = conn
        self.scope = scope
        self.keep_alive = keep_alive
        self.expect_continue = expect
        self.continue_sent = False
        self.body: list[bytes] = []
        self.body_size = 0
        self.complete = False  # the whole request body has arrived
        self.delivered = False  # ... and was handed to the app
        self.waiter: asyncio.Future[None] | None = None
        self.started = False  # response head sent
        self.finished = False  # response complete
        self.chunked = False
        self.head: bytes | None = None  # status line and headers, sent with the first body

    # --- fed by the connection -----------------------------------------------------------

    def feed(self, chunk: bytes) -> None:
        self.body.append(chunk)
        self.body_size += len(chunk)
        if self.body_size > self.conn.limits.body_buffer_bytes:
            self.conn.pause_reading()
        self._wake()

    def end(self) -> None:
        self.complete = True
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- the ASGI side -------------------------------------------------------------------

    async def receive(self) -> MutableMapping[str, Any]:
        conn = self.conn
        if not self.delivered:
            while not self.body and not self.complete and not conn.closed:
                if self.expect_continue and not self.continue_sent:
                    self.continue_sent = True
                    conn.write(_CONTINUE)
                    conn.body_clock_start()
                conn.resume_reading()
                await self._wait()
            if self.body or self.complete:
                chunk = self.body[0] if len(self.body) == 1 else b"".join(self.body)
                self.body.clear()
                self.body_size = 0
                self.delivered = self.complete
                conn.resume_reading()
                return {"type": "http.request", "body": chunk, "more_body": not self.complete}
        # The body was delivered: what is left to hear of is the client going away (or the
        # response ending, after which ASGI servers report a disconnect too).
        while not conn.closed and not self.finished:
            await self._wait()
        return {"type": "http.disconnect"}

    async def _wait(self) -> None:
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None

    async def send(self, message: MutableMapping[str, Any]) -> None:
        conn = self.conn
        kind = message["type"]
        if kind == "http.response.start":
            if self.started or self.head is not None:
                raise RuntimeError("http.response.start sent twice")
            self.head = self._head(message)
            return
        if kind != "http.response.body":
            raise RuntimeError(f"unexpected ASGI message {kind!r}")
        if self.head is None and not self.started:
            raise RuntimeError("http.response.body before http.response.start")
        if self.finished or conn.closed:
            return  # the client is gone (or the response ended): stay silent, as ASGI asks
        body: bytes = message.get("body", b"")
        more: bool = message.get("more_body", False)
        if self.scope["method"] == "HEAD":
            body = b""
        if not self.started:
            head = self.head
            assert head is not None
            self.started = True
            self.head = None
            if self.chunked:
                data = head + (b"%x\r\n%s\r\n" % (len(body), body) if body else b"")
            else:
                data = head + body
        elif self.chunked:
            data = b"%x\r\n%s\r\n" % (len(body), body) if body else b""
        else:
            data = body
        if not more:
            if self.chunked:
                data += b"0\r\n\r\n"
            self.finished = True
            self._wake()
        if data:
            conn.write(data)
        if self.finished:
            conn.cycle_done(self)
        elif conn.write_paused:
            await conn.drained()

    def _head(self, message: MutableMapping[str, Any]) -> bytes:
        status = message["status"]
        line = _STATUS_LINES.get(status) or _status_line(status)
        parts = [line]
        has_length = False
        for name, value in message.get("headers", ()):
            lowered = name.lower()
            if lowered == b"content-length":
                has_length = True
            elif lowered == b"connection" and value.lower() == b"close":
                self.keep_alive = False
            parts.append(name + b": " + value + b"\r\n")
        if not has_length and status not in (204, 304) and self.scope["method"] != "HEAD":
            if self.scope["http_version"] == "1.0":
                self.keep_alive = False  # no chunked encoding in HTTP/1.0: the close ends it
            else:
                self.chunked = True
                parts.append(b"transfer-encoding: chunked\r\n")
        if self.conn.draining:
            self.keep_alive = False
        if not self.keep_alive:
            parts.append(b"connection: close\r\n")
        parts.append(b"\r\n")
        return b"".join(parts)

    # --- running the app -----------------------------------------------------------------

    async def run(self, app: ASGIApp) -> None:
        try:
            await app(self.scope, self.receive, self.send)
        except Exception:
            scope = self.scope
            log_unexpected(log, "the application failed on %s %s", scope["method"], scope["path"])
            if not self.started and not self.conn.closed:
                self.keep_alive = False
                self.finished = True
                self.conn.write(_plain_response(500))
                self.conn.cycle_done(self)
                return
        if not self.finished:
            if not self.started and self.head is None and not self.conn.closed:
                log.error("the application returned without a response")
                self.finished = True
                self.keep_alive = False
                self.conn.write(_plain_response(500))
                self.conn.cycle_done(self)
            else:
                # A response left half-way cannot be finished honestly: end the connection.
                self.finished = True
                self.keep_alive = False
                self.conn.cycle_done(self)


class Connections(set["Connection"]):
    """The open connections of one server, and those refused over ``max_connections``
    (logged at most once a minute, not once per connection)."""

    REPORT_EVERY_S = 60.0

    def __init__(self) -> None:
        super().__init__()
        self.refused = 0  # since the server started
        self._unreported = 0
        self._reported_at: float | None = None

    def note_refused(self, limit: int, now: float) -> None:
        self.refused += 1
        self._unreported += 1
        if self._reported_at is None or now - self._reported_at >= self.REPORT_EVERY_S:
            log.warning(
                "%d connection(s) refused: %d are open, the max_connections setting",
                self._unreported,
                limit,
            )
            self._unreported = 0
            self._reported_at = now


class Connection(asyncio.Protocol):
    """One client connection; requests are answered one at a time, in order."""

    def __init__(
        self,
        app: ASGIApp,
        limits: Limits,
        connections: Connections,
        server_address: tuple[str, int] | None = None,
    ) -> None:
        self.app = app
        self.limits = limits
        self.connections = connections
        self.server = server_address
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.client: tuple[str, int] | None = None
        self.closed = False
        self.draining = False  # the server is stopping: no keep-alive after this response
        self.reading = True
        self.write_paused = False
        self._drain: asyncio.Future[None] | None = None
        self.current: Cycle | None = None  # the cycle whose response is being written
        self.parsing: Cycle | None = None  # the cycle whose body is arriving
        self.queue: deque[Cycle] = deque()
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._head_bytes = 0
        self._expect = False
        self._upgrade = False
        self._refusal = 0  # a status the head callbacks chose to refuse the request with
        self._idle: asyncio.TimerHandle | None = None
        self._idle_since: float | None = None  # when the last response ended; None: busy
        # The body clock runs while a request body is arriving (see _body_check).
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_start = 0.0  # when it started (or reading last resumed)
        self._body_last = 0.0  # when the latest body bytes came
        self._body_received = 0  # body bytes since _body_start
        self.loop = asyncio.get_running_loop()

    # --- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports implement asyncio.Transport without subclassing it)
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.client = (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) else None
        if self.server is None:
            sock = transport.get_extra_info("sockname")
            self.server = (str(sock[0]), int(sock[1])) if isinstance(sock, tuple) else None
        limit = self.limits.max_connections
        if limit and len(self.connections) >= limit:
            # Refused as it comes, before its request is read: a client may see the reset of
            # the close rather than the 503, but nothing of the server's is spent on it.
            self.connections.note_refused(limit, self.loop.time())
            self.write(_plain_response(503))
            self.close()
            return
        self.connections.add(self)
        self._went_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.connections.discard(self)
        self._disarm_idle()
        self._stop_body_clock()
        for cycle in (self.current, self.parsing, *self.queue):
            if cycle is not None:
                cycle._wake()
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._upgrade = True  # answered as plain HTTP; the connection closes after it
        except httptools.HttpParserError:
            # A callback's own refusal (a head too large) comes back wrapped by the parser.
            self._refuse(self._refusal or 400)
        # Started here, not per request: most bodies end in the packet that began them.
        if self.parsing is not None and self._body_timer is None:
            self.body_clock_start()

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    # --- httptools callbacks -------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = []
        self._head_bytes = 0
        self._expect = False

    def on_url(self, url: bytes) -> None:
        self._url += url
        self._count(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value))
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self._expect = True
        self._headers.append((name, value))
        if len(self._headers) > self.limits.max_headers:
            self._refusal = 431
            raise ValueError("too many request headers")

    def _count(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > self.limits.max_head_bytes:
            self._refusal = 431
            raise ValueError("request head too large")

    def on_headers_complete(self) -> None:
        self._idle_since = None
        parser = self.parser
        url = httptools.parse_url(self._url)
        raw_path: bytes = url.path
        path = raw_path.decode("latin-1")
        if "%" in path:
            path = unquote(path)
        version = parser.get_http_version()
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": version,
            "server": self.server,
            "client": self.client,
            "scheme": "http",
            "method": parser.get_method().decode("ascii"),
            "root_path": "",
            "path": path,
            "raw_path": raw_path,
            "query_string": url.query or b"",
            "headers": self._headers,
        }
        keep_alive = parser.should_keep_alive() and not self._upgrade
        cycle = Cycle(self, scope, keep_alive, self._expect and version == "1.1")
        self.parsing = cycle
        if self.current is None:
            self._start(cycle)
        else:
            self.queue.append(cycle)
            if len(self.queue) >= self.limits.max_pipelined:
                self.pause_reading()

    def on_body(self, body: bytes) -> None:
        if self.parsing is not None:
            self.parsing.feed(body)
            if self._body_timer is not None:
                self._body_received += len(body)
                self._body_last = self.loop.time()

    def on_message_complete(self) -> None:
        if self.parsing is not None:
            self.parsing.end()
            self.parsing = None
            self._stop_body_clock()

    # --- cycles --------------------------------------------------------------------------

    def _start(self, cycle: Cycle) -> None:
        self.current = cycle
        self.loop.create_task(cycle.run(self.app))

    def cycle_done(self, cycle: Cycle) -> None:
        """The response of ``cycle`` is complete: close, or go on with the next request."""
        if cycle is not self.current:
            return
        self.current = None
        if not cycle.keep_alive or self._upgrade or not cycle.complete or self.draining:
            # An unread request body would be taken for the next request: close instead.
            self.close()
            return
        if self.queue:
            self._start(self.queue.popleft())
            self.resume_reading()
        else:
            self._went_idle()
            self.resume_reading()

    # --- transport helpers ---------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    async def drained(self) -> None:
        if not self.write_paused or self.closed:
            return
        if self._drain is None or self._drain.done():
            self._drain = self.loop.create_future()
        await self._drain

    def pause_reading(self) -> None:
        if self.reading and not self.closed and self.transport is not None:
            self.reading = False
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.reading or self.closed or self.transport is None:
            return
        if len(self.queue) >= self.limits.max_pipelined:
            return  # enough requests wait already
        parsing = self.parsing
        if parsing is None or parsing.body_size <= self.limits.body_buffer_bytes:
            self.reading = True
            self.transport.resume_reading()
            if self._body_timer is not None:
                self._restart_body_clock()  # time spent paused was the server's, not the client's

    def close(self) -> None:
        if not self.closed and self.transport is not None:
            self.closed = True
            self.transport.close()

    def _refuse(self, status: int) -> None:
        if self.current is None or self.current.finished:
            self.write(_plain_response(status))
        self.close()

    def _went_idle(self) -> None:
        # At most one timer per connection, moved on when it fires: a request that begins
        # and ends in between costs a clock read, not a timer set and cancelled.
        self._idle_since = self.loop.time()
        if self._idle is None:
            self._idle = self.loop.call_later(self.limits.keep_alive_s, self._idle_timeout)

    def _disarm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _idle_timeout(self) -> None:
        self._idle = None
        since = self._idle_since
        if since is None or self.current is not None:
            return  # a request is in progress: its response's end sets the timer again
        left = since + self.limits.keep_alive_s - self.loop.time()
        if left > 0:
            self._idle = self.loop.call_later(left, self._idle_timeout)
        else:
            self.close()

    # --- the body clock --------------------------------------------------------------------

    def body_clock_start(self) -> None:
        """A request body is due: from now on it must keep arriving (see Limits). Not before
        a client that asked for ``100 Continue`` was told to send."""
        parsing = self.parsing
        if parsing is None or self._body_timer is not None or self.closed:
            return
        if self.limits.body_timeout_s <= 0 or (
            parsing.expect_continue and not parsing.continue_sent
        ):
            return
        self._restart_body_clock()
        self._body_timer = self.loop.call_at(
            self._body_start + self.limits.body_timeout_s, self._body_check
        )

    def _restart_body_clock(self) -> None:
        self._body_start = self._body_last = self.loop.time()
        self._body_received = 0

    def _stop_body_clock(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_check(self) -> None:
        """Cut a body that paused for ``body_timeout_s``, or that averages under
        ``body_min_rate`` once that long has passed; else look again when either could
        happen next. A few timers over a body's life, none per chunk."""
        self._body_timer = None
        if self.parsing is None or self.closed:
            return
        now = self.loop.time()
        timeout, rate = self.limits.body_timeout_s, self.limits.body_min_rate
        if not self.reading:  # paused by the server (the app reads slowly): not the client's
            self._restart_body_clock()
            self._body_timer = self.loop.call_at(now + timeout, self._body_check)
            return
        elapsed = now - self._body_start
        stalled = now - self._body_last >= timeout
        if stalled or (rate > 0 and elapsed >= timeout and self._body_received < rate * elapsed):
            self._body_too_slow()
            return
        due = self._body_last + timeout
        if rate > 0:
            due = min(
                due, max(self._body_start + timeout, self._body_start + self._body_received / rate)
            )
        self._body_timer = self.loop.call_at(max(due, now + 0.01), self._body_check)

    def _body_too_slow(self) -> None:
        log.debug("request body too slow from %s: closing the connection", self.client)
        cycle = self.parsing
        if cycle is not None and cycle is self.current and not cycle.started and cycle.head is None:
            cycle.finished = True  # what the app sends now goes nowhere
            self.write(_plain_response(408))
        self.close()

    def close_if_idle(self) -> bool:
        """For shutdown: close now unless a response is in progress."""
        if self.current is None:
            self.close()
            return True
        return False
