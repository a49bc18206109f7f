"""Request and response helpers shared by the server tests."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx

from accord.app._build import build_app
from accord.app._settings import Settings
from accord.server._app import A2AApplication
from accord.server._runner import serve


def message(text: str = "hi", **fields: Any) -> dict[str, Any]:
    return {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **fields,
    }


async def rpc(
    http: httpx.AsyncClient, method: str, params: Any = None, **kw: Any
) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    response = await http.post("/", json=body, **kw)
    assert response.status_code == 200
    result: dict[str, Any] = response.json()
    return result


async def send_rest(http: httpx.AsyncClient, text: str = "hi", **kw: Any) -> dict[str, Any]:
    response = await http.post("/message:send", json={"message": message(text)}, **kw)
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()["task"]
    return task


def reason(details: list[dict[str, Any]]) -> str:
    [info] = [d for d in details if d["@type"].endswith("google.rpc.ErrorInfo")]
    return str(info["reason"])


def violations(details: list[dict[str, Any]]) -> list[str]:
    return [
        v["field"]
        for d in details
        if d["@type"].endswith("google.rpc.BadRequest")
        for v in d["fieldViolations"]
    ]


def rest_reason(response: httpx.Response) -> str:
    error = response.json()["error"]
    assert error["code"] == response.status_code
    return reason(error["details"])


Serve = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@asynccontextmanager
async def serve_app(app: A2AApplication, **client_options: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client talking to ``app`` in-process; the engine runs for the block's duration
    (httpx's ASGI transport does not run the lifespan)."""
    await app.service.engine.start()
    try:
        headers = {"A2A-Version": "1.0", **client_options.pop("headers", {})}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://localhost", headers=headers, **client_options
        ) as client:
            yield client
    finally:
        await app.service.engine.stop()


@asynccontextmanager
async def serve_settings(
    agent: Any = None, *, client_options: dict[str, Any] | None = None, **overrides: Any
) -> AsyncIterator[httpx.AsyncClient]:
    settings = dataclasses.replace(Settings(store="memory://"), **overrides)
    async with serve_app(build_app(settings, agent), **(client_options or {})) as client:
        yield client


@asynccontextmanager
async def listening(app: A2AApplication, port: int = 0) -> AsyncIterator[int]:
    """``app`` on accord's own HTTP server, on ``port`` (0: a free loopback port; yielded),
    with its lifespan, for the block's duration."""
    stop = asyncio.Event()
    bound: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    server = asyncio.ensure_future(
        serve(app, "127.0.0.1", port, stop=stop, on_listening=bound.set_result)
    )
    done, _ = await asyncio.wait({server, bound}, return_when=asyncio.FIRST_COMPLETED)
    if server in done:
        server.result()
    try:
        yield bound.result()
    finally:
        stop.set()
        await asyncio.wait_for(server, 10)
