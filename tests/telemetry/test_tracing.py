"""Traces: a client's call to server A, whose agent calls server B with accord's client, is
one trace (client → A → B) on every binding; commits and push deliveries have spans, and a
webhook receives the delivery's ``traceparent``; with tracing off nothing is traced."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from tests.processes import free_port as _free_port
from tests.waiting import until

from accord.agents._api import RequestContext, TaskHandle
from accord.app._build import build_app
from accord.app._settings import Settings
from accord.client import Client
from accord.grpc._server import start_server
from accord.server._app import A2AApplication
from accord.server._listen import bind
from accord.server._runner import serve
from accord.wire._model import SendMessageConfiguration, TaskPushNotificationConfig

from .tracing_setup import spans, traced, untraced

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]


@contextlib.asynccontextmanager
async def served(agent: Any = None, **settings: Any) -> AsyncIterator[tuple[str, int]]:
    """``agent`` served on a real HTTP port and a gRPC port; yields (url, grpc port)."""
    sockets = bind("127.0.0.1", 0, "HTTP")
    port = sockets[0].getsockname()[1]
    grpc_port = _free_port()
    settings.setdefault("tracing", "global")
    app = build_app(Settings(store="memory://", port=port, grpc_port=grpc_port, **settings), agent)
    stop = asyncio.Event()
    task = asyncio.ensure_future(serve(app, "127.0.0.1", port, sockets=sockets, stop=stop))
    await _wait_started(app)
    server, _ = await start_server(app.service, f"127.0.0.1:{grpc_port}")
    try:
        yield f"http://127.0.0.1:{port}", grpc_port
    finally:
        await server.stop(0)
        stop.set()
        await task


async def _wait_started(app: A2AApplication) -> None:
    await until(lambda: app.service.engine._started, "the engine to start")


@pytest.fixture(autouse=True)
def tracing_on() -> Any:
    traced()
    yield
    untraced()


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_call_through_two_servers_is_one_trace(binding: str) -> None:
    async with served() as (b_url, _):

        async def relay(ctx: RequestContext, task: TaskHandle) -> None:
            async with Client.connect(b_url, binding=binding) as b:
                answer = await b.send(f"relayed: {ctx.text}")
            await task.complete(f"B said {answer.status.state.name}")  # type: ignore[union-attr]

        async with served(relay) as (a_url, _):
            tracer = trace.get_tracer("test")
            with tracer.start_as_current_span("the user's request") as root:
                async with Client.connect(a_url, binding=binding) as a:
                    task = await a.send("hello")
            assert task.status.message.parts[0].text == "B said COMPLETED"  # type: ignore[union-attr]

    trace_id = root.get_span_context().trace_id
    finished = spans()
    sends = [s for s in finished if s.kind is SpanKind.SERVER and s.name == "SendMessage"]
    # A's and B's request spans, both in the user's trace (the card reads are not A2A calls)
    assert len(sends) == 2
    assert {s.context.trace_id for s in sends} == {trace_id}
    by_id = {s.context.span_id: s for s in finished}
    a_span, b_span = sorted(sends, key=lambda s: s.start_time or 0)
    assert a_span.parent is not None and a_span.parent.span_id == root.get_span_context().span_id
    # B's span descends from A's (through A's agent run and its client call)
    parent = b_span.parent
    chain = []
    while parent is not None and parent.span_id in by_id:
        chain.append(by_id[parent.span_id])
        parent = by_id[parent.span_id].parent
    assert a_span in chain
    commits = [s for s in finished if s.name == "accord.commit"]
    assert commits and {s.context.trace_id for s in commits} == {trace_id}


async def test_a_webhook_gets_the_delivery_span_as_traceparent() -> None:
    received: list[httpx.Headers] = []
    got = asyncio.Event()

    async def webhook(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        received.append(httpx.Headers([(k.decode(), v.decode()) for k, v in scope["headers"]]))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        got.set()

    hook_sockets = bind("127.0.0.1", 0, "HTTP")
    hook_port = hook_sockets[0].getsockname()[1]
    stop = asyncio.Event()
    hook = asyncio.ensure_future(
        serve(webhook, "127.0.0.1", hook_port, sockets=hook_sockets, stop=stop)
    )
    try:
        webhook_config = TaskPushNotificationConfig(
            url=f"http://127.0.0.1:{hook_port}/hook", id="h"
        )
        configuration = SendMessageConfiguration(task_push_notification_config=webhook_config)
        async with (
            served(push_allow_hosts=["127.0.0.1"]) as (url, _),
            Client.connect(url) as client,
        ):
            await client.send("hello", configuration=configuration)
            await asyncio.wait_for(got.wait(), 30)
    finally:
        stop.set()
        await hook
    pushes = [s for s in spans() if s.name == "accord.push"]
    assert pushes
    traceparent = received[0]["traceparent"]
    trace_hex, span_hex = traceparent.split("-")[1:3]
    assert any(
        format(s.context.trace_id, "032x") == trace_hex
        and format(s.context.span_id, "016x") == span_hex
        for s in pushes
    )


async def test_with_tracing_off_nothing_is_traced() -> None:
    untraced()
    traced_before = len(spans())
    async with served(tracing="off") as (url, _), Client.connect(url) as client:
        await client.send("hello")
    assert len(spans()) == traced_before
