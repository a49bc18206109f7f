"""``/metrics``: each family moves as a scripted load says it must — requests by binding,
method and outcome, open streams, commits, tasks by state, push deliveries, recovery, the
PostgreSQL holds and bus, the harness — with bounded labels; access rules; off when off."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from tests.waiting import until

from accord.agents._api import RequestContext, TaskHandle
from accord.app._build import build_app
from accord.app._settings import Principal, Settings
from accord.engine import Engine
from accord.grpc._server import start_server
from accord.server._app import A2AApplication
from accord.store._postgres import PostgresStore
from accord.telemetry import agents
from accord.wire._model import Message, Part, Role, SendMessageRequest

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def message(text: str) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}


@asynccontextmanager
async def serving(app: A2AApplication, **options: Any) -> AsyncIterator[httpx.AsyncClient]:
    await app.service.engine.start()
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://localhost", headers={"A2A-Version": "1.0"}
        ) as http:
            yield http
    finally:
        await app.service.engine.stop()


async def scrape(http: httpx.AsyncClient, **kw: Any) -> Samples:
    answer = await http.get("/metrics", **kw)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return parse(answer.text)


async def metric(
    http: httpx.AsyncClient, name: str, at_least: float, **labels: str
) -> Samples | None:
    """The samples once ``name`` (with ``labels``) has reached ``at_least``; else None."""
    samples = await scrape(http)
    return samples if value(samples, name, **labels) >= at_least else None


class Gate:
    """An agent whose turns wait until released (streams stay open meanwhile)."""

    def __init__(self) -> None:
        self.open = asyncio.Event()

    async def __call__(self, ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        if ctx.text == "wait":
            await self.open.wait()
        await task.complete("done")


async def test_request_store_and_task_families_follow_a_scripted_load(tmp_path: Path) -> None:
    gate = Gate()
    app = build_app(Settings(store=f"sqlite:///{tmp_path / 'm.db'}", grpc_port=None), gate)
    async with serving(app) as http:
        before = await scrape(http)
        task_ids = []
        for _ in range(3):
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
            body["params"] = {"message": message("go")}
            task_ids.append((await http.post("/", json=body)).json()["result"]["task"]["id"])
        for task_id in task_ids[:2]:
            assert (await http.get(f"/tasks/{task_id}")).status_code == 200
        assert (await http.get("/tasks/no-such-task")).status_code == 404
        # a gRPC call, through the same counters
        server, port = await start_server(app.service, "127.0.0.1:0", metrics=app.jsonrpc.metrics)
        try:
            import grpc

            from accord.wire.protobuf import to_proto

            request = SendMessageRequest(
                message=Message(message_id="g-1", role=Role.USER, parts=[Part(text="go")])
            )
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = channel.unary_unary(
                    "/lf.a2a.v1.A2AService/SendMessage",
                    request_serializer=lambda m: m.SerializeToString(),
                    response_deserializer=lambda b: b,
                )
                await call(to_proto(request), metadata=(("a2a-version", "1.0"),))
        finally:
            await server.stop(0)
        # a stream held open by the agent
        stream = asyncio.ensure_future(
            http.post("/message:stream", json={"message": message("wait")})
        )
        labels = {"binding": "http+json", "method": "SendStreamingMessage"}
        await until(
            lambda: metric(http, "accord_streams_open", 1, **labels), "the stream to be open"
        )
        gate.open.set()
        await stream
        after = await scrape(http)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    ok = {"outcome": "ok"}
    assert moved("accord_requests_total", binding="jsonrpc", method="SendMessage", **ok) == 3
    assert moved("accord_requests_total", binding="http+json", method="GetTask", **ok) == 2
    assert (
        moved(
            "accord_requests_total", binding="http+json", method="GetTask", outcome="TASK_NOT_FOUND"
        )
        == 1
    )
    assert moved("accord_requests_total", binding="grpc", method="SendMessage", **ok) == 1
    assert (
        moved("accord_request_duration_seconds_count", binding="jsonrpc", method="SendMessage") == 3
    )
    assert (
        value(after, "accord_streams_open", binding="http+json", method="SendStreamingMessage") == 0
    )
    assert value(after, "accord_tasks", state="COMPLETED") == 5
    assert moved("accord_store_commits_total") >= 1
    assert value(after, "accord_store_commit_writes_count") == value(
        after, "accord_store_commits_total"
    )
    assert value(after, "accord_recovery_sweeps_total") == 1
    text = (await _text(app)).lower()
    for task_id in task_ids:  # never a task id as a label
        assert task_id not in text


async def _text(app: A2AApplication) -> str:
    async with serving(app) as http:
        return (await http.get("/metrics")).text


async def test_push_deliveries_and_failures_are_counted() -> None:
    app = build_app(
        Settings(store="memory://", push_allow_hosts=["127.0.0.1"], push_max_attempts=1)
    )
    async with serving(app) as http:
        hook = {"url": "http://127.0.0.1:9/nothing-listens", "id": "h"}
        body = {"message": message("hi"), "configuration": {"taskPushNotificationConfig": hook}}
        assert (await http.post("/message:send", json=body)).status_code == 200
        samples = await until(
            lambda: metric(http, "accord_push_gave_up_total", 1), "the delivery to give up"
        )
        assert value(samples, "accord_push_deliveries_total", outcome="failed") == 1
        assert value(samples, "accord_push_deliveries_total", outcome="delivered") == 0
        assert value(samples, "accord_push_delivery_duration_seconds_count") == 1
        assert value(samples, "accord_push_configs_failing") == 1


async def test_recovery_counts_the_tasks_it_fails(tmp_path: Path) -> None:
    path = f"sqlite:///{tmp_path / 'r.db'}"
    stuck, working = asyncio.Event(), asyncio.Event()

    async def hangs(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        working.set()
        await stuck.wait()

    first = build_app(Settings(store=path), hangs)
    async with serving(first) as http:
        body = {"message": message("hang"), "configuration": {"returnImmediately": True}}
        assert (await http.post("/message:send", json=body)).status_code == 200
        await asyncio.wait_for(working.wait(), 30)
    # (the engine stopped with the task WORKING, as if the process had died)
    second = build_app(Settings(store=path))
    async with serving(second) as http:
        samples = await scrape(http)
    assert value(samples, "accord_recovery_sweeps_total") == 1
    assert value(samples, "accord_recovery_failed_tasks_total") == 1
    assert value(samples, "accord_tasks", state="FAILED") == 1


async def test_harness_turns_model_calls_and_tokens_are_counted() -> None:
    before = parse(await _text(build_app(Settings(store="memory://", metrics=True))))
    with agents.turn("helper", conversation_id="c-1"):
        with agents.model_call("model-x", provider="test"):
            agents.tokens(input=12, output=5)
        with agents.tool_call("search", call_id="t-1"):
            pass
    agents.hook_aborted("before_tool")
    after = parse(await _text(build_app(Settings(store="memory://"))))

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("accord_harness_turns_total", outcome="ok") == 1
    assert moved("accord_harness_model_calls_total", model="model-x", outcome="ok") == 1
    assert moved("accord_harness_tokens_total", model="model-x", direction="input") == 12
    assert moved("accord_harness_tokens_total", model="model-x", direction="output") == 5
    assert moved("accord_harness_tool_calls_total", tool="search", outcome="ok") == 1
    assert moved("accord_harness_hook_aborts_total", hook="before_tool") == 1


async def test_postgresql_holds_and_the_bus_are_reported(pg_url: str) -> None:
    gate = Gate()
    node_a = build_app(Settings(store=pg_url), gate)
    node_b = build_app(Settings(store=pg_url), gate)
    async with serving(node_a) as a, serving(node_b) as b:
        stream = asyncio.ensure_future(a.post("/message:stream", json={"message": message("wait")}))
        await until(lambda: metric(a, "accord_task_holds", 1), "the task held on node A")
        gate.open.set()
        await stream
        await until(
            lambda: metric(b, "accord_bus_notifications_received_total", 1), "node B notified"
        )
        samples = await scrape(b)
        assert value(samples, "accord_bus_lag_seconds_count") >= 1
        assert value(await scrape(a), "accord_bus_notifies_sent_total") >= 1
        assert value(samples, "accord_store_commit_duration_seconds_count") >= 0
        assert isinstance(node_a.service.engine.store, PostgresStore)
        assert isinstance(node_a.service.engine, Engine)


async def test_metrics_need_credentials_when_authentication_is_configured() -> None:
    token = "metrics-test-token-0123456789"
    auth = {"bearer_tokens": {token: Principal("prometheus")}}
    async with serving(build_app(Settings(store="memory://", **auth))) as http:
        assert (await http.get("/metrics")).status_code == 401
        await scrape(http, headers={"Authorization": f"Bearer {token}"})
    async with serving(build_app(Settings(store="memory://", metrics_public=True, **auth))) as http:
        await scrape(http)
    async with serving(
        build_app(Settings(store="memory://", metrics_tenant_labels=True, **auth))
    ) as http:
        refused = await http.get("/metrics", headers={"Authorization": f"Bearer {token}"})
        assert refused.status_code == 403  # tenant names need the Agent actor


async def test_metrics_off_and_elsewhere() -> None:
    async with serving(build_app(Settings(store="memory://", metrics=False))) as http:
        assert (await http.get("/metrics")).status_code == 404
    async with serving(build_app(Settings(store="memory://", metrics_path="/ops/m"))) as http:
        assert (await http.get("/metrics")).status_code == 404
        await scrape_at(http, "/ops/m")


async def scrape_at(http: httpx.AsyncClient, path: str) -> None:
    answer = await http.get(path)
    assert answer.status_code == 200 and "accord_build_info" in answer.text


async def test_a_harness_turn_is_counted_with_its_model_call() -> None:
    from accord.harness import Conversation, conversation_agent

    def answer(conversation: Conversation) -> str:
        return "noted"

    harness = conversation_agent(answer, agent_id="counter")
    app = build_app(Settings(store="memory://"), harness)
    async with serving(app) as http:
        before = await scrape(http)
        sent = await http.post(
            "/message:send",
            json={"message": message("plan it")},
            headers={"X-Participant-Id": "alice"},
        )
        assert sent.status_code == 200, sent.text
        # (the answer is durable, and so sent, a moment before the turn's code returns)
        for _ in range(1000):  # a guard against hanging, not a timing assertion
            after = await scrape(http)
            turns = value(after, "accord_harness_turns_total", outcome="ok") - value(
                before, "accord_harness_turns_total", outcome="ok"
            )
            if turns:
                break
            await asyncio.sleep(0.01)
    calls = sum(
        v - before.get(k, 0.0)
        for k, v in after.items()
        if k[0] == "accord_harness_model_calls_total" and ("outcome", "ok") in k[1]
    )
    assert turns == 1 and calls == 1
