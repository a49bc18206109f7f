"""accord's HTTP client for model calls (accord.harness.models._http) over real sockets: a
scripted HTTP/1.1 server in the test's loop writes the exact bytes of each answer — kept-alive
connections reused, a kept connection the server closed sent again once on a fresh one (and
never once a byte of the answer came), fixed-length, chunked and until-close bodies, error
statuses, oversized heads refused, the connect and call timeouts, the pool's bound and idle
time, TLS against a local server with a self-signed certificate (trusted by a custom CA
context, refused by the default one and under another name), a CONNECT proxy (with its
credentials, TLS inside its tunnel), NO_PROXY and this machine never proxied; then the proxy
settings read from the environment."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tests.harness.fake_openai import FakeOpenAI
from tests.push.test_tls import self_signed

from accord.harness.models._http import (
    BrokenAnswer,
    ConnectFailed,
    HttpClient,
    Limits,
    Proxy,
    RefusedAnswer,
    StatusError,
    TimedOut,
    UnsupportedProxy,
    bypassed,
    proxy_for,
)

BODY = b'{"model":"m"}'


def fixed(body: bytes, *extra: str, status: str = "200 OK") -> bytes:
    head = "".join(f"{h}\r\n" for h in extra)
    return f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode() + body


def chunked(*pieces: bytes) -> bytes:
    out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    for piece in pieces:
        out += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    return out + b"0\r\n\r\n"


@dataclass
class Request:
    connection: int  # which of the server's connections (from 0)
    head: bytes
    body: bytes

    def header(self, name: str) -> str | None:
        for line in self.head.split(b"\r\n")[1:]:
            key, _, value = line.decode("latin-1").partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None


# What the server does with a request: its answer's bytes (and whether to close after), or a
# coroutine that writes what it likes to the writer
Answer = Callable[[Request, asyncio.StreamWriter], Awaitable[bool]]


@dataclass
class Server:
    """A scripted HTTP/1.1 server: each request takes the next answer of ``answers``."""

    answers: list[Answer] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    closed: asyncio.Event = field(default_factory=asyncio.Event)  # a connection ended
    port: int = 0
    server: asyncio.Server | None = None

    async def start(self, tls: ssl.SSLContext | None = None, host: str = "127.0.0.1") -> Server:
        self.server = await asyncio.start_server(self._serve, host, 0, ssl=tls)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number = self.connections
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request = Request(number, head, b"")
                length = int(request.header("content-length") or 0)
                request.body = await reader.readexactly(length)
                self.requests.append(request)
                answer = self.answers.pop(0) if self.answers else send(fixed(b"{}"))
                if await answer(request, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self.closed.set()

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.server.wait_closed(), 5)


def send(data: bytes, *, close: bool = False) -> Answer:
    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(data)
        await writer.drain()
        return close

    return answer


def hang_up() -> Answer:
    """Reads the request and closes the connection without a byte of answer."""

    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        return True

    return answer


def stall(data: bytes, until: asyncio.Event) -> Answer:
    """Sends ``data``, then nothing until ``until`` is set."""

    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(data)
        await writer.drain()
        await until.wait()
        return True

    return answer


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    started = await Server().start()
    yield started
    await started.close()


async def call(client: HttpClient, path: str = "/chat/completions") -> tuple[int, bytes]:
    async with client.stream(path, BODY) as response:
        return response.status, b"".join([data async for data in response.iter_bytes()])


# --- a call, its body, the pool -------------------------------------------------------------


async def test_a_post_of_json_with_the_clients_headers_under_the_base_path(server: Server) -> None:
    server.answers.append(send(fixed(b"hello", "Content-Type: text/plain")))
    client = HttpClient(server.url, {"Authorization": "Bearer k"})
    async with client.stream("/chat/completions", BODY) as response:
        assert (response.status, response.headers["content-type"]) == (200, "text/plain")
        assert b"".join([data async for data in response.iter_bytes()]) == b"hello"
    request = server.requests[0]
    assert request.head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert request.header("host") == f"127.0.0.1:{server.port}"
    assert request.header("authorization") == "Bearer k"
    assert request.header("content-type") == "application/json"
    assert request.body == BODY
    await client.aclose()


async def test_the_base_urls_query_is_kept_and_a_header_that_cannot_be_sent_is_refused(
    server: Server,
) -> None:
    client = HttpClient(f"http://127.0.0.1:{server.port}/openai/v1?api-version=2")
    assert await call(client) == (200, b"{}")
    assert server.requests[0].head.startswith(b"POST /openai/v1/chat/completions?api-version=2 ")
    await client.aclose()
    for key in ("k\r\nX-Evil: 1", "k\n", "k\x00", "kéy\u2603"):
        with pytest.raises(ValueError, match="a character HTTP cannot send"):
            HttpClient(server.url, {"Authorization": f"Bearer {key}"})


async def test_a_chunked_body_comes_piece_by_piece_as_the_server_writes_it(server: Server) -> None:
    go_on = asyncio.Event()
    first = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHello\r\n"

    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(first)
        await go_on.wait()
        writer.write(b"6\r\n world\r\n0\r\n\r\n")
        return False

    server.answers.append(answer)
    client = HttpClient(server.url)
    async with client.stream("/x", BODY) as response:
        body = response.iter_bytes()
        assert await anext(body) == b"Hello"  # (before the rest was even written)
        go_on.set()
        assert b"".join([data async for data in body]) == b" world"
    assert await call(client) == (200, b"{}")
    assert server.connections == 1  # the connection served the next call
    await client.aclose()


async def test_a_body_that_ends_with_the_connection_is_whole_and_the_connection_not_kept(
    server: Server,
) -> None:
    server.answers.append(send(b"HTTP/1.1 200 OK\r\n\r\nuntil the end", close=True))
    client = HttpClient(server.url)
    assert await call(client) == (200, b"until the end")
    assert await call(client) == (200, b"{}")
    assert server.connections == 2
    await client.aclose()


async def test_kept_alive_connections_are_reused_and_the_pool_is_bounded(server: Server) -> None:
    client = HttpClient(server.url, max_connections=2)
    for _ in range(3):
        assert await call(client) == (200, b"{}")
    assert server.connections == 1
    results = await asyncio.gather(*(call(client) for _ in range(6)))
    assert results == [(200, b"{}")] * 6
    assert server.connections == 2  # six at once through at most two connections
    await client.aclose()
    await asyncio.wait_for(server.closed.wait(), 5)  # (closing the client closes them)


async def test_a_call_waits_for_a_free_connection_within_its_timeout(server: Server) -> None:
    done = asyncio.Event()
    server.answers.append(stall(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhalf", done))
    client = HttpClient(server.url, max_connections=1, timeout_s=0.2)
    async with client.stream("/x", BODY):  # (holds the one connection, its answer unread)
        with pytest.raises(TimedOut, match=r"came free within 0.2 s \(1 open\)"):
            await call(client)
        waiting = asyncio.ensure_future(call(client))
        while not client._waiters:  # (until it waits for the connection)
            await asyncio.sleep(0)
        waiting.cancel()
    done.set()
    # The held connection was closed (its answer not read whole): the next call opens one
    assert await call(client) == (200, b"{}")
    assert server.connections == 2
    assert waiting.cancelled()
    await client.aclose()


async def test_an_idle_connection_is_closed_after_its_idle_time(server: Server) -> None:
    client = HttpClient(server.url, idle_s=0.05)
    assert await call(client) == (200, b"{}")
    await asyncio.wait_for(server.closed.wait(), 5)  # the client closed it, idle
    assert await call(client) == (200, b"{}")
    assert server.connections == 2
    await client.aclose()


async def test_a_kept_connection_the_server_closed_is_sent_again_once_on_a_fresh_one(
    server: Server,
) -> None:
    server.answers += [send(fixed(b"first")), hang_up()]
    client = HttpClient(server.url)
    assert await call(client) == (200, b"first")
    # The second call goes on the kept connection; the server closes it without answering
    # (as one does that closed it meanwhile): the call is made again on a new connection.
    assert await call(client) == (200, b"{}")
    assert [r.connection for r in server.requests] == [0, 0, 1]
    await client.aclose()


async def test_no_call_is_sent_again_on_a_fresh_connection_or_once_its_answer_began(
    server: Server,
) -> None:
    server.answers.append(hang_up())
    client = HttpClient(server.url)
    with pytest.raises(BrokenAnswer, match="closed in the middle of the answer"):
        await call(client)  # (a new connection: not asked again)
    server.answers += [send(fixed(b"first")), send(b"HTTP/1.1 200 OK\r\nContent-Le", close=True)]
    assert await call(client) == (200, b"first")
    with pytest.raises(BrokenAnswer, match=r"closed in the middle of the answer \(its head\)"):
        await call(client)  # (kept, but bytes of the answer had come)
    server.answers.append(send(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf", close=True))
    with pytest.raises(BrokenAnswer, match=r"\(its body\)"):
        await call(client)
    assert len(server.requests) == 4
    await client.aclose()


async def test_an_error_status_is_raised_with_the_servers_message_and_headers(
    server: Server,
) -> None:
    said = b'{"error": {"message": "slow down", "type": "rate_limit_error", "code": "rl"}}'
    server.answers += [
        send(fixed(said, "Retry-After: 3", status="429 Too Many Requests")),
        send(fixed(b"upstream gone", status="502 Bad Gateway")),
    ]
    client = HttpClient(server.url)
    with pytest.raises(StatusError) as refused:
        await call(client)
    error = refused.value
    assert (error.status, error.message, error.kind, error.code) == (
        429,
        "slow down",
        "rate_limit_error",
        "rl",
    )
    assert error.headers["retry-after"] == "3"
    assert str(error) == "HTTP 429: slow down"
    with pytest.raises(StatusError, match="HTTP 502: upstream gone"):
        await call(client)
    await client.aclose()


async def test_interim_answers_are_skipped_and_a_compressed_one_refused(server: Server) -> None:
    interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
    server.answers += [
        send(interim + fixed(b"real", "X-Real: 1")),
        send(fixed(b"\x1f\x8b...", "Content-Encoding: gzip")),
    ]
    client = HttpClient(server.url)
    async with client.stream("/x", BODY) as response:
        assert (response.status, response.headers.get("x-real"), "link" in response.headers) == (
            200,
            "1",
            False,
        )
        assert b"".join([data async for data in response.iter_bytes()]) == b"real"
    assert server.requests[0].header("accept-encoding") == "identity"
    with pytest.raises(RefusedAnswer, match=r"compressed \(gzip\), which was not asked for"):
        await call(client)
    await client.aclose()


def test_a_client_that_outlives_its_event_loop_opens_new_connections_in_the_next() -> None:
    with FakeOpenAI() as fake:  # (a server in a thread of its own: it outlives the loops)
        client = HttpClient(fake.base_url, timeout_s=5)
        answers = [asyncio.run(call(client)) for _ in range(3)]
    assert [status for status, _ in answers] == [200, 200, 200]
    assert all(body.endswith(b"data: [DONE]\n\n") for _, body in answers)


# --- bounds ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "says"),
    [
        (b"X-Big: " + b"x" * 20_000 + b"\r\n", "a header of the answer is longer than 16384"),
        (b"".join(b"X-%d: 1\r\n" % i for i in range(101)), "more than 100 headers"),
        (b"".join(b"X-%d: %s\r\n" % (i, b"y" * 9000) for i in range(8)), "head is longer"),
    ],
)
async def test_an_oversized_head_is_refused(server: Server, head: bytes, says: str) -> None:
    server.answers.append(send(b"HTTP/1.1 200 OK\r\n" + head + b"Content-Length: 0\r\n\r\n"))
    client = HttpClient(server.url)
    with pytest.raises(RefusedAnswer, match=says):
        await call(client)
    await client.aclose()


async def test_a_long_status_line_or_an_answer_that_is_not_http_is_refused(server: Server) -> None:
    server.answers += [
        send(b"HTTP/1.1 200 " + b"O" * 2000 + b"\r\nContent-Length: 0\r\n\r\n"),
        send(b"SSH-2.0-OpenSSH\r\n\r\n"),
    ]
    client = HttpClient(server.url, limits=Limits(max_status_bytes=1024))
    with pytest.raises(RefusedAnswer, match="status line is longer than 1024"):
        await call(client)
    with pytest.raises(BrokenAnswer, match=r"not HTTP/1.1"):
        await call(client)
    await client.aclose()


# --- timeouts -------------------------------------------------------------------------------


async def test_the_call_timeout_before_the_head_and_in_the_middle_of_the_body(
    server: Server,
) -> None:
    done = asyncio.Event()
    server.answers += [
        stall(b"", done),
        stall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n", done),
    ]
    client = HttpClient(server.url, timeout_s=0.2)
    with pytest.raises(TimedOut, match=r"did not answer within 0.2 s") as before:
        await call(client)
    assert before.value.stalled is False
    async with client.stream("/x", BODY) as response:
        body = response.iter_bytes()
        assert await anext(body) == b"hi"
        with pytest.raises(TimedOut, match="nothing of the answer came within") as during:
            await anext(body)
    assert during.value.stalled is True
    done.set()
    await client.aclose()


async def test_a_server_that_keeps_sending_is_not_timed_out(server: Server) -> None:
    pieces = 8

    async def trickle(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(pieces):  # (each piece within the timeout; all of them past it)
            await asyncio.sleep(0.1)
            writer.write(b"1\r\n.\r\n")
        writer.write(b"0\r\n\r\n")
        return False

    server.answers.append(trickle)
    client = HttpClient(server.url, timeout_s=0.5)
    assert await call(client) == (200, b"." * pieces)
    await client.aclose()


async def test_the_connect_timeout_covers_a_tls_handshake_that_never_comes(
    server: Server,
) -> None:
    # (a plain TCP server that reads and never answers: the TLS handshake waits)
    server.answers.append(stall(b"", asyncio.Event()))
    client = HttpClient(f"https://127.0.0.1:{server.port}", connect_timeout_s=0.2)
    with pytest.raises(ConnectFailed, match=r"no connection within 0.2 s") as failed:
        await call(client)
    assert isinstance(failed.value.__cause__, TimeoutError)
    await client.aclose()


async def test_a_refused_connection_is_a_connect_failure_with_its_cause() -> None:
    free = await Server().start()
    await free.close()  # (nobody listens on its port now)
    client = HttpClient(free.url)
    with pytest.raises(ConnectFailed, match=r"cannot connect to http://127.0.0.1") as failed:
        await call(client)
    assert isinstance(failed.value.__cause__, ConnectionRefusedError)
    await client.aclose()


# --- TLS ------------------------------------------------------------------------------------


async def tls_server_for(tmp_path: Path, name: str) -> tuple[Server, Path]:
    """A server whose certificate, self-signed, names ``name``; the names asked for in SNI
    kept in its ``sni``."""
    cert, key = self_signed(tmp_path, name)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    names: list[str | None] = []
    context.sni_callback = lambda sock, name, ctx: names.append(name)  # type: ignore[assignment,func-returns-value]
    started = await Server().start(tls=context)  # (127.0.0.1: "localhost" reaches it)
    started.sni = names  # type: ignore[attr-defined]
    return started, cert


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[tuple[Server, Path]]:
    started, cert = await tls_server_for(tmp_path, "localhost")
    yield started, cert
    await started.close()


async def test_tls_with_a_custom_ca_verifies_the_name_and_sends_sni(
    tls_server: tuple[Server, Path],
) -> None:
    server, cert = tls_server
    trusted = ssl.create_default_context(cafile=str(cert))
    client = HttpClient(f"https://localhost:{server.port}", ssl_context=trusted)
    assert await call(client) == (200, b"{}")
    assert await call(client) == (200, b"{}")
    assert server.connections == 1
    assert server.sni == ["localhost"]  # type: ignore[attr-defined]
    assert server.requests[0].header("host") == f"localhost:{server.port}"
    await client.aclose()


async def test_tls_refuses_a_certificate_the_system_does_not_trust_or_of_another_name(
    tls_server: tuple[Server, Path],
) -> None:
    server, cert = tls_server
    default = HttpClient(f"https://localhost:{server.port}")  # (the system's CAs)
    with pytest.raises(ConnectFailed, match=r"(?i)certificate verify failed") as failed:
        await call(default)
    assert isinstance(failed.value.__cause__, ssl.SSLCertVerificationError)
    trusted = ssl.create_default_context(cafile=str(cert))
    other_name = HttpClient(f"https://127.0.0.1:{server.port}", ssl_context=trusted)
    with pytest.raises(ConnectFailed, match=r"(?i)certificate verify failed"):
        await call(other_name)
    assert server.requests == []
    await default.aclose()
    await other_name.aclose()


# --- proxies --------------------------------------------------------------------------------


# The endpoints' name in the proxy tests: only the proxy resolves it (to this machine), as a
# proxy resolves the names of the hosts it reaches; this machine's own names never go through
# a proxy.
REMOTE = "model.test"


@dataclass
class TunnelProxy:
    """A CONNECT proxy: each tunnel's request head kept; ``refuse`` answers 403 instead;
    ``REMOTE`` is 127.0.0.1 to it."""

    heads: list[bytes] = field(default_factory=list)
    refuse: bool = False
    port: int = 0
    server: asyncio.Server | None = None

    async def start(self) -> TunnelProxy:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.heads.append(head)
        if self.refuse:
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        host, _, port = head.split(b" ")[1].decode().rpartition(":")
        host = "127.0.0.1" if host == REMOTE else host
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()


@pytest.fixture
async def proxy() -> AsyncIterator[TunnelProxy]:
    started = await TunnelProxy().start()
    yield started
    await started.close()


async def test_calls_go_through_a_connect_proxy_with_its_credentials(
    server: Server, proxy: TunnelProxy
) -> None:
    environ = {"HTTP_PROXY": f"http://user:p%40ss@127.0.0.1:{proxy.port}"}
    client = HttpClient(f"http://{REMOTE}:{server.port}/v1", environ=environ)
    assert await call(client) == (200, b"{}")
    assert await call(client) == (200, b"{}")  # (the tunnel is kept alive too)
    assert len(proxy.heads) == 1
    head = proxy.heads[0].decode()
    assert head.startswith(f"CONNECT {REMOTE}:{server.port} HTTP/1.1\r\n")
    assert server.requests[0].header("host") == f"{REMOTE}:{server.port}"
    assert "Proxy-Authorization: Basic dXNlcjpwQHNz\r\n" in head  # user:p@ss
    await client.aclose()


async def test_tls_goes_through_the_proxys_tunnel_to_the_endpoint(
    tmp_path: Path, proxy: TunnelProxy
) -> None:
    server, cert = await tls_server_for(tmp_path, REMOTE)
    trusted = ssl.create_default_context(cafile=str(cert))
    environ = {"https_proxy": f"127.0.0.1:{proxy.port}"}  # (no scheme: http://)
    client = HttpClient(f"https://{REMOTE}:{server.port}", ssl_context=trusted, environ=environ)
    assert await call(client) == (200, b"{}")
    assert proxy.heads[0].startswith(f"CONNECT {REMOTE}:{server.port} ".encode())
    assert server.sni == [REMOTE]  # type: ignore[attr-defined]
    await client.aclose()
    await server.close()


async def test_a_proxy_that_refuses_the_tunnel_no_proxy_and_this_machine(
    server: Server, proxy: TunnelProxy
) -> None:
    proxy.refuse = True
    environ = {"HTTP_PROXY": f"http://127.0.0.1:{proxy.port}"}
    refused = HttpClient(f"http://{REMOTE}:{server.port}/v1", environ=environ)
    with pytest.raises(ConnectFailed, match=rf"refused a tunnel to {REMOTE}:.*403 Forbidden"):
        await call(refused)
    listed = {**environ, "NO_PROXY": f"example.com,{REMOTE}"}
    assert HttpClient(f"http://{REMOTE}:{server.port}/v1", environ=listed).proxy is None
    # this machine is reached directly, whatever NO_PROXY says
    direct = HttpClient(server.url, environ=environ)
    assert direct.proxy is None
    assert await call(direct) == (200, b"{}")
    assert len(proxy.heads) == 1 and len(server.requests) == 1
    await refused.aclose()
    await direct.aclose()


def test_the_proxy_the_environment_names() -> None:
    assert proxy_for("https", "api.openai.com", 443, {}) is None
    assert proxy_for("https", "api.openai.com", 443, {"HTTPS_PROXY": "http://p:3128"}) == Proxy(
        "p", 3128
    )
    # lowercase first; https endpoints read HTTPS_PROXY only, http ones HTTP_PROXY only
    both = {"https_proxy": "http://low:1", "HTTPS_PROXY": "http://up:2", "HTTP_PROXY": "http://h:3"}
    assert proxy_for("https", "x.com", 443, both) == Proxy("low", 1)
    assert proxy_for("http", "x.com", 80, both) == Proxy("h", 3)
    assert proxy_for("http", "x.com", 80, {"HTTPS_PROXY": "http://p:1"}) is None
    assert proxy_for("https", "x.com", 443, {"HTTPS_PROXY": "p"}) == Proxy("p", 80)
    assert proxy_for("https", "x.com", 443, {"ALL_PROXY": "http://a:1"}) == Proxy("a", 1)
    assert proxy_for("https", "x.com", 443, {**both, "all_proxy": "http://a:1"}) == Proxy("low", 1)
    with pytest.raises(UnsupportedProxy, match=r"\$ALL_PROXY"):
        proxy_for("http", "x.com", 80, {"all_proxy": "socks5://s:1080"})
    for unsupported in ("socks5://p:1080", "https://p:3128"):
        with pytest.raises(UnsupportedProxy, match="is not an http:// proxy"):
            proxy_for("https", "x.com", 443, {"HTTPS_PROXY": unsupported})


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "direct"),
    [
        ("*", "api.openai.com", 443, True),
        ("openai.com", "api.openai.com", 443, True),
        (".openai.com", "api.openai.com", 443, True),
        ("openai.com", "openai.com", 443, True),
        ("notopenai.com", "openai.com", 443, False),
        ("ai.com", "api.openai.com", 443, False),
        ("api.openai.com:443", "api.openai.com", 443, True),
        ("api.openai.com:8443", "api.openai.com", 443, False),
        ("10.0.0.0/8, localhost", "10.1.2.3", 443, True),
        ("10.0.0.0/8", "11.1.2.3", 443, False),
        ("::1", "::1", 443, True),
        ("[::1]:8080", "::1", 8080, True),
        ("", "api.openai.com", 443, False),
        ("", "localhost", 11434, True),  # (this machine: never through a proxy)
        ("", "ollama.localhost", 11434, True),
        ("", "127.0.0.1", 8000, True),
        ("", "127.1.2.3", 8000, True),
        ("", "::1", 8000, True),
        ("", "localhost.example.com", 443, False),
    ],
)
def test_no_proxy(no_proxy: str, host: str, port: int, direct: bool) -> None:
    assert bypassed(host, port, {"NO_PROXY": no_proxy}) is direct
    assert bypassed(host, port, {"no_proxy": no_proxy}) is direct


# --- the packages stay out ------------------------------------------------------------------

LAZY = """
import sys
from accord.harness._settings import ModelFactory, parse
factory = ModelFactory(parse({"model": "openai:a", "models": ["anthropic:b"]}))
factory("openai:a"), factory("anthropic:b")
print(sorted(m for m in ("openai", "anthropic") if m in sys.modules))
"""


@pytest.mark.processes
def test_accords_client_imports_neither_providers_package() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", LAZY], capture_output=True, text=True, check=True, timeout=60
    )
    assert ran.stdout.strip() == "[]"
