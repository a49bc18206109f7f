"""accord's HTTP/1.1 front (accord.server._h1 + runner) over real sockets, with raw bytes: what
a client relies on from an HTTP server — keep-alive and pipelining in order, bodies of every
framing, back-pressure, bounded heads, disconnects, timeouts and a graceful stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import pytest
from tests.waiting import until

from accord.server import _failures as failures
from accord.server._h1 import Limits
from accord.server._runner import StartupFailed, serve

Scope = MutableMapping[str, Any]


class App:
    """A small ASGI app whose routes exercise the server."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.disconnected = asyncio.Event()
        self.release = asyncio.Event()
        self.startup_error: str | None = None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self.events.append("startup")
                    if self.startup_error:
                        await send({"type": "lifespan.startup.failed", "message": "nope"})
                        return
                    await send({"type": "lifespan.startup.complete"})
                else:
                    self.events.append("shutdown")
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        path = scope["path"]
        if path == "/late-read":  # the app takes its time before it reads the body
            self.events.append("late-read")
            await self.release.wait()
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if path == "/stream":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"one\n", "more_body": True})
            await send({"type": "http.response.body", "body": b"two\n", "more_body": True})
            self.events.append("streaming")
            while (await receive())["type"] != "http.disconnect":
                pass
            self.disconnected.set()
            return
        if path == "/finish-stream":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"a", "more_body": True})
            await send({"type": "http.response.body", "body": b"b"})
            return
        if path == "/slow":
            self.events.append("slow-started")
            await self.release.wait()
        if path == "/boom":
            raise RuntimeError("boom")
        if path == "/nothing":
            return
        if path == "/big":
            body = b"x" * 4_000_000
        answer = (
            body
            if path in ("/echo", "/big", "/late-read")
            else f"{scope['method']} {path}".encode()
        )
        if path == "/echo":
            answer = (scope["query_string"] + b"|" + body) if scope["query_string"] else body
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", str(len(answer)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": answer})


@contextlib.asynccontextmanager
async def running(app: App, **options: Any) -> AsyncIterator[tuple[int, asyncio.Event]]:
    stop = asyncio.Event()
    bound: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    server = asyncio.ensure_future(
        serve(app, "127.0.0.1", 0, stop=stop, on_listening=bound.set_result, **options)
    )
    done, _ = await asyncio.wait({server, bound}, return_when=asyncio.FIRST_COMPLETED)
    if server in done:
        server.result()
    try:
        yield bound.result(), stop
    finally:
        stop.set()
        await asyncio.wait_for(server, 10)


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                break
            body += chunk[:-2]
    else:
        body = await reader.read()
    return status, headers, body


def request(method: str, path: str, body: bytes = b"", extra: str = "") -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


async def test_keep_alive_serves_many_requests_on_one_connection() -> None:
    async with running(App()) as (port, _):
        reader, writer = await connect(port)
        for i in range(5):
            writer.write(request("POST", "/echo", f"body {i}".encode()))
            status, _, body = await read_response(reader)
            assert (status, body) == (200, f"body {i}".encode())
        writer.close()


async def test_pipelined_requests_are_answered_in_order() -> None:
    app = App()
    async with running(app) as (port, _):
        reader, writer = await connect(port)
        writer.write(
            request("POST", "/slow", b"first")
            + request("POST", "/echo", b"second")
            + request("GET", "/third")
        )
        await until(lambda: "slow-started" in app.events, "the first request to start")
        await asyncio.sleep(0.1)  # a window: the requests behind it do not start meanwhile
        assert app.events.count("slow-started") == 1
        app.release.set()
        answers = [await read_response(reader) for _ in range(3)]
        assert [a[2] for a in answers] == [b"POST /slow", b"second", b"GET /third"]
        writer.close()


async def test_chunked_request_body_and_query_string() -> None:
    async with running(App()) as (port, _):
        reader, writer = await connect(port)
        writer.write(
            b"POST /echo?a=1&b=%20 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
        )
        status, _, body = await read_response(reader)
        assert (status, body) == (200, b"a=1&b=%20|hello world")
        writer.close()


async def test_percent_encoded_path_is_decoded_in_scope() -> None:
    async with running(App()) as (port, _):
        reader, writer = await connect(port)
        writer.write(request("GET", "/a%20b"))
        assert (await read_response(reader))[2] == b"GET /a b"
        writer.close()


async def test_large_request_body_arrives_whole_through_flow_control() -> None:
    payload = bytes(range(256)) * 8192  # 2 MiB, far past the read buffer
    async with running(App(), limits=Limits(body_buffer_bytes=64 * 1024)) as (port, _):
        reader, writer = await connect(port)
        writer.write(request("POST", "/echo", payload))
        status, _, body = await read_response(reader)
        assert status == 200 and body == payload
        writer.close()


async def test_large_response_is_written_whole() -> None:
    async with running(App()) as (port, _):
        reader, writer = await connect(port)
        writer.write(request("GET", "/big"))
        status, _, body = await read_response(reader)
        assert status == 200 and len(body) == 4_000_000
        writer.close()


async def test_expect_100_continue_is_answered_before_the_body() -> None:
    async with running(App()) as (port, _):
        reader, writer = await connect(port)
        writer.write(
            b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"
        )
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert interim.startswith(b"HTTP/1.1 100")
        writer.write(b"data")
        assert (await read_response(reader))[2] == b"data"
        writer.close()


async def test_malformed_request_gets_400_and_close() -> None:
    async with running(App()) as (port, _):
        reader, writer = await connect(port)
        writer.write(b"NOT A REQUEST\r\n\r\n")
        status, headers, _ = await read_response(reader)
        assert status == 400 and headers["connection"] == "close"
        assert await reader.read() == b""


async def test_oversized_head_gets_431() -> None:
    async with running(App(), limits=Limits(max_head_bytes=2048, max_headers=10)) as (port, _):
        reader, writer = await connect(port)
        writer.write(request("GET", "/", extra=f"X-Big: {'a' * 4096}\r\n"))
        assert (await read_response(reader))[0] == 431
        reader, writer = await connect(port)
        many = "".join(f"X-{i}: v\r\n" for i in range(20))
        writer.write(request("GET", "/", extra=many))
        assert (await read_response(reader))[0] == 431


async def test_http_1_0_closes_after_the_response() -> None:
    async with running(App()) as (port, _):
        reader, writer = await connect(port)
        writer.write(b"GET /x HTTP/1.0\r\n\r\n")
        status, headers, body = await read_response(reader)
        assert (status, body, headers.get("connection")) == (200, b"GET /x", "close")
        assert await reader.read() == b""


async def test_connection_close_is_honoured() -> None:
    async with running(App()) as (port, _):
        reader, writer = await connect(port)
        writer.write(request("GET", "/x", extra="Connection: close\r\n"))
        assert (await read_response(reader))[0] == 200
        assert await asyncio.wait_for(reader.read(), 5) == b""


async def test_streamed_response_is_chunked_and_disconnect_reaches_the_app() -> None:
    app = App()
    async with running(app) as (port, _):
        reader, writer = await connect(port)
        writer.write(request("GET", "/stream"))
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert b"transfer-encoding: chunked" in head
        assert await asyncio.wait_for(reader.readuntil(b"two\n\r\n"), 5) == (
            b"4\r\none\n\r\n4\r\ntwo\n\r\n"
        )
        writer.close()
        await asyncio.wait_for(app.disconnected.wait(), 5)


async def test_finished_stream_ends_with_the_last_chunk_and_keeps_the_connection() -> None:
    async with running(App()) as (port, _):
        reader, writer = await connect(port)
        writer.write(request("GET", "/finish-stream"))
        assert (await read_response(reader))[2] == b"ab"
        writer.write(request("GET", "/again"))
        assert (await read_response(reader))[2] == b"GET /again"
        writer.close()


async def test_head_response_has_no_body() -> None:
    async with running(App()) as (port, _):
        reader, writer = await connect(port)
        writer.write(request("HEAD", "/x") + request("GET", "/y"))
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert b"content-length: 7" in head  # the length of "HEAD /x", body left out
        assert (await read_response(reader))[2] == b"GET /y"  # no stray body in between
        writer.close()


async def test_application_errors_become_500_and_the_server_goes_on() -> None:
    async with running(App()) as (port, _):
        reader, writer = await connect(port)
        writer.write(request("GET", "/boom"))
        assert (await read_response(reader))[0] == 500
        reader, writer = await connect(port)
        writer.write(request("GET", "/nothing"))
        assert (await read_response(reader))[0] == 500
        reader, writer = await connect(port)
        writer.write(request("GET", "/fine"))
        assert (await read_response(reader))[0] == 200
        writer.close()


async def test_idle_connection_is_closed_after_keep_alive_timeout() -> None:
    async with running(App(), limits=Limits(keep_alive_s=0.2)) as (port, _):
        reader, writer = await connect(port)
        writer.write(request("GET", "/x"))
        assert (await read_response(reader))[0] == 200
        assert await asyncio.wait_for(reader.read(), 5) == b""


async def test_keep_alive_timeout_counts_from_the_last_response() -> None:
    # Requests 0.15 s apart keep the connection open across several 0.4 s timeouts; once
    # they stop, it closes a full timeout after the last response, not sooner.
    async with running(App(), limits=Limits(keep_alive_s=0.4)) as (port, _):
        reader, writer = await connect(port)
        loop = asyncio.get_running_loop()
        for _ in range(8):
            writer.write(request("GET", "/x"))
            assert (await read_response(reader))[0] == 200
            answered = loop.time()
            await asyncio.sleep(0.15)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        assert loop.time() - answered >= 0.35


async def test_stop_lets_a_response_in_progress_finish_then_runs_shutdown() -> None:
    app = App()
    async with running(app, grace_s=5) as (port, stop):
        reader, writer = await connect(port)
        writer.write(request("GET", "/slow"))
        await until(lambda: "slow-started" in app.events, "the response to start")
        stop.set()
        await asyncio.sleep(0.2)  # a window: a shutdown that did not wait would have run
        assert "shutdown" not in app.events
        app.release.set()
        status, headers, body = await read_response(reader)
        assert (status, body, headers.get("connection")) == (200, b"GET /slow", "close")
    assert app.events[-1] == "shutdown"


async def test_stop_cuts_a_stream_after_the_grace_period() -> None:
    app = App()
    async with running(app, grace_s=0.3) as (port, stop):
        reader, writer = await connect(port)
        writer.write(request("GET", "/stream"))
        await asyncio.wait_for(reader.readuntil(b"two\n\r\n"), 5)
        stop.set()
    assert app.disconnected.is_set()
    assert app.events[-1] == "shutdown"


async def test_failed_startup_is_reported_and_nothing_listens() -> None:
    app = App()
    app.startup_error = "nope"
    with pytest.raises(StartupFailed):
        await serve(app, "127.0.0.1", 0, stop=asyncio.Event())


async def test_garbage_and_cut_requests_never_take_the_server_down() -> None:
    """Random bytes, truncated heads and bodies, then a normal request on a new connection."""
    import random

    rng = random.Random(7)
    samples = (
        [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) for _ in range(30)]
        + [request("POST", "/echo", b"0123456789")[:cut] for cut in range(0, 60, 3)]
        + [
            b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
            b"GET / HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nHost: t\r\n\r\n",
        ]
    )
    async with running(App()) as (port, _):
        for sample in samples:
            reader, writer = await connect(port)
            writer.write(sample)
            writer.write_eof()
            data = await asyncio.wait_for(reader.read(), 5)  # answered or closed, never hung
            assert data == b"" or data.startswith(b"HTTP/1.1 ")
            writer.close()
        reader, writer = await connect(port)
        writer.write(request("POST", "/echo", b"still here"))
        assert (await read_response(reader))[2] == b"still here"
        writer.close()


# --- slow and many clients -----------------------------------------------------------------


async def closed_by_server(reader: asyncio.StreamReader) -> bytes | None:
    """Everything the server still sends before it closes the connection (None: still open
    after 10 s)."""
    try:
        return await asyncio.wait_for(reader.read(), 10)
    except ConnectionResetError:
        return b""
    except TimeoutError:
        return None


async def test_a_head_sent_a_byte_at_a_time_is_cut_at_the_keep_alive_timeout() -> None:
    async with running(App(), limits=Limits(keep_alive_s=0.3)) as (port, _):
        reader, writer = await connect(port)
        writer.write(b"GET / HTTP/1.1\r\nHost: t\r\n")
        for _ in range(200):  # 20 s at most, against a 0.3 s timeout
            if reader.at_eof():
                break
            writer.write(b"X")  # one more byte of a header that never ends
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(reader.read(1), 0.1)
        assert reader.at_eof()


async def test_a_body_that_stops_gets_408_and_the_connection_closes() -> None:
    app = App()
    async with running(app, limits=Limits(body_timeout_s=0.3)) as (port, _):
        reader, writer = await connect(port)
        writer.write(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nx")
        status, headers, _ = await read_response(reader)
        assert (status, headers["connection"]) == (408, "close")
        assert await closed_by_server(reader) == b""
        # the server goes on
        reader, writer = await connect(port)
        writer.write(request("POST", "/echo", b"whole"))
        assert (await read_response(reader))[2] == b"whole"
        writer.close()


async def test_a_body_trickling_under_the_minimum_rate_is_cut() -> None:
    # Never a pause as long as the timeout, but a byte every 50 ms is 20 bytes/s.
    limits = Limits(body_timeout_s=0.5, body_min_rate=1000)
    async with running(App(), limits=limits) as (port, _):
        reader, writer = await connect(port)
        writer.write(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
        answer = b""
        for _ in range(400):  # 20 s at most
            with contextlib.suppress(ConnectionError):
                writer.write(b"x")
                await writer.drain()
            with contextlib.suppress(TimeoutError):
                answer += await asyncio.wait_for(reader.read(1024), 0.05)
            if answer.endswith(b"Request Timeout") or reader.at_eof():
                break
        assert answer.startswith(b"HTTP/1.1 408")


async def test_a_body_with_short_pauses_at_a_fair_rate_is_read_whole() -> None:
    async with running(App(), limits=Limits(body_timeout_s=5, body_min_rate=10)) as (port, _):
        reader, writer = await connect(port)
        writer.write(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
        for part in (b"one", b"two", b"three"):
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
            await asyncio.sleep(0.1)
        writer.write(b"0\r\n\r\n")
        assert (await read_response(reader))[2] == b"onetwothree"
        writer.close()


async def test_the_body_clock_waits_while_the_app_has_not_read() -> None:
    """With ``Expect: 100-continue`` the client sends nothing before it is told to, and a
    body past the read buffer pauses reading until the app reads it: neither wait is the
    client's, however long the app takes."""
    app = App()
    limits = Limits(body_timeout_s=0.2, body_buffer_bytes=1024)
    async with running(app, limits=limits) as (port, _):
        expecting, expecting_writer = await connect(port)
        expecting_writer.write(
            b"POST /late-read HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n"
            b"Expect: 100-continue\r\n\r\n"
        )
        buffered, buffered_writer = await connect(port)
        body = b"b" * 2 * 1024 * 1024  # more than one read takes: reading pauses mid-body
        buffered_writer.write(request("POST", "/late-read", body))
        await until(lambda: app.events.count("late-read") == 2, "both requests to reach the app")
        await asyncio.sleep(1.0)  # a window of five body timeouts: none may cut a request
        app.release.set()
        assert (await asyncio.wait_for(expecting.readuntil(b"\r\n\r\n"), 5)).startswith(
            b"HTTP/1.1 100"
        )
        expecting_writer.write(b"data")
        assert (await read_response(expecting))[:3:2] == (200, b"data")
        assert (await read_response(buffered))[:3:2] == (200, body)
        expecting_writer.close()
        buffered_writer.close()


async def test_connections_past_the_maximum_are_refused_until_one_closes() -> None:
    limits = Limits(max_connections=2, keep_alive_s=60)  # the held ones stay open
    async with running(App(), limits=limits) as (port, _):
        held = []
        for _ in range(2):
            reader, writer = await connect(port)
            writer.write(request("GET", "/x"))
            assert (await read_response(reader))[0] == 200
            held.append(writer)
        reader, writer = await connect(port)
        refused = await closed_by_server(reader)
        assert refused is not None, "a third connection was kept open"
        assert refused == b"" or refused.startswith(b"HTTP/1.1 503")
        writer.close()
        held.pop().close()
        for _ in range(500):  # until the server has seen the close
            reader, writer = await connect(port)
            with contextlib.suppress(ConnectionError):
                writer.write(request("GET", "/x", extra="Connection: close\r\n"))
                answer = await closed_by_server(reader)
                if answer and answer.startswith(b"HTTP/1.1 200"):
                    break
            writer.close()
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("a connection was refused after another one closed")
        for writer in held:
            writer.close()


async def test_an_application_failing_again_and_again_logs_one_traceback(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(failures, "_FAILURES", failures.FailureLog())  # none seen before
    caplog.set_level(logging.ERROR, logger="accord.server._http")
    async with running(App()) as (port, _):
        for _ in range(20):
            reader, writer = await connect(port)
            writer.write(request("GET", "/boom"))
            assert (await read_response(reader))[0] == 500
            writer.close()
    logged = [r for r in caplog.records if "failed on GET /boom" in r.getMessage()]
    assert len([r for r in logged if r.exc_info]) == 1
    assert len(logged) == 1  # the rest are counted, reported a minute after this one
