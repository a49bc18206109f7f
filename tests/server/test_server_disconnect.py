"""Streams over a real (in-process) uvicorn: a client that goes away releases what its stream
held, even while the task waits (uvicorn's ``send`` stays silent after a disconnect, so the
server must listen for it); idle streams get keep-alive comments."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn
from server_helpers import message
from tests.processes import free_port
from tests.waiting import until

from accord.agents._api import RequestContext, TaskHandle
from accord.app._build import build_app
from accord.app._settings import Settings
from accord.server._app import A2AApplication


async def asking_agent(ctx: RequestContext, task: TaskHandle) -> None:
    await task.require_input("and then?")


@pytest.fixture
async def served() -> AsyncIterator[tuple[A2AApplication, str]]:
    app = build_app(Settings(store="memory://", heartbeat_s=0.05), asking_agent)
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        lifespan="on",
        log_level="warning",
        timeout_graceful_shutdown=1,  # a leaked stream must not hold the shutdown
    )
    server = uvicorn.Server(config)
    running = asyncio.ensure_future(server._serve())  # serve() without taking over signals
    await until(lambda: server.started, "the server to start")
    try:
        yield app, f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await running


async def wait_until_unsubscribed(app: A2AApplication, task_id: str) -> None:
    bus = app.service.engine.bus
    # (a leak fails here)
    await until(lambda: bus.subscriber_count(task_id) == 0, f"the followers of {task_id} to go")


@pytest.mark.parametrize("how", ["rest-post", "rest-get", "jsonrpc"])
async def test_a_dropped_subscription_is_released(
    served: tuple[A2AApplication, str], how: str, caplog: pytest.LogCaptureFixture
) -> None:
    app, url = served
    async with httpx.AsyncClient(base_url=url, headers={"A2A-Version": "1.0"}) as http:
        sent = await http.post("/message:send", json={"message": message()})
        task_id = sent.json()["task"]["id"]
        assert sent.json()["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        if how == "jsonrpc":
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SubscribeToTask",
                "params": {"id": task_id},
            }
            request = http.stream("POST", "/", json=body)
        else:
            request = http.stream(how.removeprefix("rest-").upper(), f"/tasks/{task_id}:subscribe")
        async with request as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    break  # the task snapshot: the stream is live
            assert app.service.engine.bus.subscriber_count(task_id) == 1
        # The client has gone; the task still waits for input.
        await wait_until_unsubscribed(app, task_id)
        task = (await http.get(f"/tasks/{task_id}")).json()
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []  # the stream was stopped, not crashed


async def test_an_idle_stream_gets_keep_alive_comments(
    served: tuple[A2AApplication, str],
) -> None:
    _app, url = served
    async with httpx.AsyncClient(base_url=url, headers={"A2A-Version": "1.0"}) as http:
        sent = await http.post("/message:send", json={"message": message()})
        task_id = sent.json()["task"]["id"]
        async with http.stream("POST", f"/tasks/{task_id}:subscribe") as response:
            lines = []
            async for line in response.aiter_lines():
                lines.append(line)
                if line.startswith(":"):
                    break
    assert lines[0].startswith("id: ")
    assert any(line.startswith("data: ") for line in lines)
    assert lines[-1] == ": keep-alive"
