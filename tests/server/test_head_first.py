"""Who asks, and in which version, is decided from the request's head: a caller the server
refuses is answered before a byte of its body is read, so anonymous clients cannot make it
hold bodies of up to ``max_body_bytes`` each. On every HTTP binding (JSON-RPC, HTTP+JSON, the
command surface), in process (the app never asks for the body) and over a real socket (the
answer comes while the client has sent only the head)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import MutableMapping
from typing import Any

import pytest
from server_helpers import listening

from accord.app._build import build_app
from accord.app._settings import Settings
from accord.server._app import A2AApplication

KEY = "client-key-0123456789abcdef"
PRINCIPALS = [{"identity": "client", "api_key": KEY}]
BIG = 10 * 1024 * 1024  # max_body_bytes

# (path, how the binding writes the refusal: JSON-RPC's code, or the HTTP status)
TARGETS = [
    ("/", "jsonrpc"),
    ("/message:send", "rest"),
    ("/tasks/commands/message:send", "surface"),
]


def app(**overrides: Any) -> A2AApplication:
    settings = Settings(store="memory://", principals=PRINCIPALS)
    return build_app(dataclasses.replace(settings, **overrides))


@dataclasses.dataclass
class Exchange:
    status: int
    body: Any
    body_read: bool


async def exchange(target: A2AApplication, path: str, headers: dict[str, str]) -> Exchange:
    """One POST of a 10 MiB body through the ASGI interface; whether the app asked for it."""
    read = False
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal read
        read = True
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    raw = {"host": "localhost", "content-type": "application/json", "content-length": str(BIG)}
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in {**raw, **headers}.items()],
    }
    await target(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return Exchange(sent[0]["status"], json.loads(body), read)


def refused(kind: str, answer: Exchange, jsonrpc_code: int, status: int) -> bool:
    if kind == "jsonrpc":
        return answer.status == 200 and answer.body["error"]["code"] == jsonrpc_code
    return answer.status == status


@pytest.mark.parametrize(("path", "kind"), TARGETS)
async def test_an_anonymous_request_is_refused_without_reading_its_body(
    path: str, kind: str
) -> None:
    for headers in ({"a2a-version": "1.0"}, {"a2a-version": "1.0", "x-api-key": "wrong" * 4}):
        answer = await exchange(app(), path, headers)
        assert refused(kind, answer, -32012, 401), answer
        assert not answer.body_read


@pytest.mark.parametrize(("path", "kind"), TARGETS)
async def test_an_unsupported_version_is_refused_without_reading_the_body(
    path: str, kind: str
) -> None:
    answer = await exchange(app(), path, {"a2a-version": "0.3", "x-api-key": KEY})
    if kind == "surface":  # the seed's outcome for it
        assert (answer.status, answer.body["outcome"]) == (502, "version-not-supported")
    else:
        assert refused(kind, answer, -32009, 400), answer
    assert not answer.body_read


@pytest.mark.parametrize(("path", "kind"), TARGETS)
async def test_a_body_not_declared_json_is_refused_without_reading_it(path: str, kind: str) -> None:
    headers = {"a2a-version": "1.0", "x-api-key": KEY, "content-type": "text/plain"}
    answer = await exchange(app(), path, headers)
    assert refused(kind, answer, -32005, 415), answer
    assert not answer.body_read


@pytest.mark.parametrize(("path", "kind"), TARGETS)
async def test_an_authenticated_request_is_read_and_served(path: str, kind: str) -> None:
    answer = await exchange(app(), path, {"a2a-version": "1.0", "x-api-key": KEY})
    assert answer.body_read  # the same request with credentials reaches its body


@pytest.mark.parametrize(("path", "kind"), TARGETS)
async def test_over_a_socket_the_refusal_comes_before_the_body_is_sent(
    path: str, kind: str
) -> None:
    async with listening(app()) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(
                f"POST {path} HTTP/1.1\r\nHost: localhost\r\nA2A-Version: 1.0\r\n"
                f"Content-Type: application/json\r\nContent-Length: {BIG}\r\n\r\n".encode()
            )
            await writer.drain()
            # Only the head was sent: a server waiting for the body would never answer (the
            # wait is a bound for a broken server, not a measurement).
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            status = int(head.split(b" ", 2)[1])
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            body = json.loads(await reader.readexactly(length))
            answer = Exchange(status, body, body_read=False)
            assert refused(kind, answer, -32012, 401), answer
            # The unread body is not taken for a next request: the server closes.
            assert await asyncio.wait_for(reader.read(), 10) == b""
        finally:
            writer.close()
