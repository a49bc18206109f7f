"""Rate limits per principal (docs/server.md, "Rate limits"): a token bucket per
authenticated caller — not per socket peer — refused with ResourceExhausted and when to come
back on every binding (HTTP+JSON and JSON-RPC: 429 with Retry-After; gRPC:
RESOURCE_EXHAUSTED with RetryInfo), with a bounded number of buckets; accord's client sends a
refused call again after the wait the server asked for, up to its bound."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import A2AClientError, ClientCallContext, ClientConfig, create_client
from a2a.types import ListTasksRequest
from grpc_status import rpc_status
from server_helpers import listening, message
from tests.processes import free_port

from accord.app._build import build_app
from accord.app._settings import Settings
from accord.client import ApiKey, Client, ResourceExhaustedError, RetryPolicy
from accord.core import Caller
from accord.grpc._server import start_server
from accord.server import A2AApplication
from accord.service import RATE_BUCKETS, RateLimiter
from accord.store._postgres import PostgresStore
from accord.wire import A2AError, ErrorKind, TaskState
from accord.wire._proto import a2a_pb2, a2a_pb2_grpc

ALICE = "alice-key-0123456789abc"
BOB = "bob-key-0123456789abcde"
PRINCIPALS = [
    {"identity": "alice", "actors": ["a2a.tasks.Client"], "api_key": ALICE},
    {"identity": "bob", "actors": ["a2a.tasks.Client"], "api_key": BOB},
]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _caller(name: str) -> Caller:
    return Caller(identity=name, authenticated=True)


# --- the bucket ------------------------------------------------------------------------------


def test_a_bucket_holds_its_burst_and_refills_at_its_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(per_minute=60, burst=3, clock=clock)
    assert [limiter.wait_s("a") for _ in range(3)] == [0, 0, 0]
    assert limiter.wait_s("a") == 1  # one token a second
    clock.now += 0.5
    assert limiter.wait_s("a") == 1  # half a token: still a (whole) second to wait
    clock.now += 0.5
    assert limiter.wait_s("a") == 0
    clock.now += 3600
    assert [limiter.wait_s("a") for _ in range(4)] == [0, 0, 0, 1]  # never more than the burst
    slow = RateLimiter(per_minute=2, burst=1, clock=clock)
    assert (slow.wait_s("a"), slow.wait_s("a")) == (0, 30)


async def test_buckets_are_per_principal_and_bounded() -> None:
    clock = Clock()
    limiter = RateLimiter(per_minute=60, burst=1, max_principals=2, clock=clock)
    await limiter.check(_caller("alice"))
    with pytest.raises(A2AError) as refused:
        await limiter.check(_caller("alice"))
    assert refused.value.kind is ErrorKind.RESOURCE_EXHAUSTED
    assert refused.value.retry_after_s == 1
    await limiter.check(_caller("bob"))  # another principal, from the same peer or not
    await limiter.check(
        Caller(identity="alice", tenant="other", authenticated=True)
    )  # other tenant
    assert len(limiter) == 2  # the least recently seen (alice of "") was dropped
    await limiter.check(_caller("alice"))  # so its bucket came back full
    # Anonymous callers are told apart by their address.
    await limiter.check(Caller(), "10.0.0.1")
    await limiter.check(Caller(), "10.0.0.2")
    with pytest.raises(A2AError):
        await limiter.check(Caller(), "10.0.0.1")


def test_the_settings_are_checked() -> None:
    from accord.app import load
    from accord.config import ConfigError

    for name in ("rate-limit-per-minute", "rate-limit-burst", "rate-limit-principals"):
        with pytest.raises(ConfigError, match=name):
            load(None, {name.replace("-", "_"): "0"})
    loaded = load(None, {"rate_limit_per_minute": "120"})
    assert loaded.rate_limit_per_minute == 120
    assert build_app(loaded).service.rate_limiter is not None
    assert build_app(Settings(store="memory://")).service.rate_limiter is None


# --- on the bindings ---------------------------------------------------------------------------


@dataclass
class Served:
    app: A2AApplication
    url: str
    grpc: a2a_pb2_grpc.A2AServiceStub


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    grpc_port, http_port = free_port(), free_port()
    settings = Settings(
        public_url=f"http://127.0.0.1:{http_port}",
        store="memory://",
        principals=PRINCIPALS,
        rate_limit_per_minute=60,
        rate_limit_burst=2,
        grpc_port=grpc_port,
    )
    app = build_app(settings)
    grpc_server, _ = await start_server(app.service, f"127.0.0.1:{grpc_port}", app.jsonrpc.auth)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}")
    try:
        async with listening(app, http_port) as port:
            yield Served(app, f"http://127.0.0.1:{port}", a2a_pb2_grpc.A2AServiceStub(channel))
    finally:
        await channel.close()
        await grpc_server.stop(None)


def _headers(key: str) -> dict[str, str]:
    return {"A2A-Version": "1.0", "X-API-Key": key}


def _reason(details: list[dict[str, Any]]) -> str:
    return next(str(d["reason"]) for d in details if d["@type"].endswith("ErrorInfo"))


async def test_http_json_answers_429_with_retry_after_per_principal(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        body = {"message": message("hi")}
        for _ in range(2):
            ok = await http.post("/message:send", json=body, headers=_headers(ALICE))
            assert ok.status_code == 200, ok.text
        refused = await http.post("/message:send", json=body, headers=_headers(ALICE))
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "1"
        error = refused.json()["error"]
        assert error["status"] == "RESOURCE_EXHAUSTED"
        assert _reason(error["details"]) == "RESOURCE_EXHAUSTED"
        retry = [d for d in error["details"] if d["@type"].endswith("RetryInfo")]
        assert retry and retry[0]["retryDelay"] == "1s"
        # Bob, from the very same socket peer, has his own bucket.
        assert (await http.get("/tasks", headers=_headers(BOB))).status_code == 200
        # A caller the server does not know is refused (401) before any bucket is touched.
        unknown = await http.get("/tasks", headers=_headers("not-a-key-0123456789"))
        assert unknown.status_code == 401


async def test_jsonrpc_answers_429_with_the_protocols_error(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        body = {"jsonrpc": "2.0", "id": 7, "method": "ListTasks", "params": {}}
        for _ in range(2):
            ok = await http.post("/", json=body, headers=_headers(ALICE))
            assert ok.status_code == 200 and "result" in ok.json(), ok.text
        refused = await http.post("/", json=body, headers=_headers(ALICE))
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "1"
        answer = refused.json()
        assert answer["id"] is None  # refused from the head, before the body (and its id)
        assert answer["error"]["code"] == -32010  # ResourceExhaustedError
        assert _reason(answer["error"]["data"]) == "RESOURCE_EXHAUSTED"


async def test_grpc_answers_resource_exhausted_with_retry_info(served: Served) -> None:
    metadata = (("x-api-key", ALICE), ("a2a-version", "1.0"))
    for _ in range(2):
        await served.grpc.ListTasks(a2a_pb2.ListTasksRequest(), metadata=metadata)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await served.grpc.ListTasks(a2a_pb2.ListTasksRequest(), metadata=metadata)
    assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    status = rpc_status.from_call(refused.value)
    assert status is not None
    kinds = [detail.type_url.rsplit("/", 1)[-1] for detail in status.details]
    assert "google.rpc.RetryInfo" in kinds
    # The buckets are the server's, not a binding's: HTTP is refused for alice too.
    async with httpx.AsyncClient(base_url=served.url) as http:
        assert (await http.get("/tasks", headers=_headers(ALICE))).status_code == 429
        assert (await http.get("/tasks", headers=_headers(BOB))).status_code == 200


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
async def test_accords_client_waits_as_told_and_then_gives_up(served: Served, binding: str) -> None:
    patient = RetryPolicy(max_attempts=3, max_retry_after=5)
    async with Client.connect(
        served.url, binding=binding, credentials=ApiKey(ALICE), retry=patient
    ) as client:
        await client.list_tasks_page()  # the card read is not limited; two calls are allowed
        started = time.monotonic()
        task = await client.send("hello")  # the second token
        again = await client.send("again")  # none left: refused, waited for, sent again
        assert time.monotonic() - started >= 0.9
        assert task.status.state is again.status.state is TaskState.COMPLETED
    impatient = RetryPolicy(max_attempts=3, max_retry_after=0.5)
    async with Client.connect(
        served.url, binding=binding, credentials=ApiKey(BOB), retry=impatient
    ) as client:
        await client.list_tasks_page()
        await client.list_tasks_page()
        with pytest.raises(ResourceExhaustedError) as refused:
            await client.list_tasks_page()  # the server asks for 1 s: more than this client waits
        assert refused.value.retry_after == 1


async def test_the_command_surface_shares_the_buckets(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        body = {"message": message("hi")}
        headers = _headers(ALICE)
        for _ in range(2):
            ok = await http.post("/tasks/commands/message:send", json=body, headers=headers)
            assert ok.status_code != 429, ok.text
        refused = await http.post("/tasks/commands/message:send", json=body, headers=headers)
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "1"
        assert refused.json()["retryAfter"] == 1
        # And the A2A bindings see the same empty bucket.
        assert (await http.get("/tasks", headers=headers)).status_code == 429


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_official_sdk_client_sees_the_429(served: Served, binding: str) -> None:
    config = ClientConfig(streaming=False, supported_protocol_bindings=[binding])
    context = ClientCallContext(service_parameters={"X-API-Key": ALICE})
    async with await create_client(served.url, client_config=config) as client:
        for _ in range(2):
            await client.list_tasks(ListTasksRequest(), context=context)
        with pytest.raises(A2AClientError, match="429"):
            await client.list_tasks(ListTasksRequest(), context=context)


@pytest.mark.postgres
async def test_a_shared_bucket_on_postgresql(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    access = store.extend(RATE_BUCKETS)
    await store.open()
    try:
        assert access.dialect == "postgresql"
        one = RateLimiter(per_minute=60, burst=2, shared=access)
        other = RateLimiter(per_minute=60, burst=2, shared=access)  # another node's
        odd = Caller(identity="a\x00b", tenant="t", authenticated=True)  # any identity
        await one.check(odd)
        await other.check(odd)
        with pytest.raises(A2AError) as refused:
            await one.check(odd)
        assert refused.value.retry_after_s == 1
        await other.check(_caller("bob"))  # another caller's bucket
        # Buckets full again long since are deleted now and then (bounded table).
        await access.pool.execute("UPDATE rate_buckets SET at_ms = 0")
        one._pruned = -1e9
        await one.check(_caller("carol"))
        assert await access.pool.fetchval("SELECT count(*) FROM rate_buckets") == 1
    finally:
        await store.close()
