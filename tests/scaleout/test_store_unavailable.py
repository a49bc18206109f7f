"""A store that cannot read or write answers "unavailable", and accord's client retries.

An ``accord serve`` node on PostgreSQL reached through a TCP proxy that the test takes down
(the database is unreachable) or on a database the test makes read-only (reads pass, writes
fail). Every binding answers the binding's "unavailable" — HTTP 503 with ``Retry-After`` on
JSON-RPC and HTTP+JSON (the JSON-RPC body still names the error), gRPC ``UNAVAILABLE`` —
with a ``RetryInfo`` detail, and accord's client sends the same request again (the message's
id is its safe-retry key) until the store answers: one task, with the message once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import pytest
from cluster import Node, start_node, stop_node, wait_ready
from tests.cuttable_proxy import CuttableProxy
from tests.processes import free_port

from accord.client import Client, text_message
from accord.client._errors import UnavailableError
from accord.client._options import RetryPolicy
from accord.wire._model import UNSET, Role, Task, TaskState

pytestmark = pytest.mark.processes  # accord serve nodes

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]
METRIC_BINDING = {"JSONRPC": "jsonrpc", "HTTP+JSON": "http+json", "GRPC": "grpc"}
HEADERS = {"A2A-Version": "1.0"}


@dataclass
class Served:
    node: Node
    proxy: CuttableProxy
    dsn: str  # the database, reached directly (not through the proxy)


def _through(dsn: str, port: int) -> tuple[str, int]:
    """``dsn`` pointed at 127.0.0.1:``port``, and the port it named."""
    parts = urlsplit(dsn)
    user = f"{parts.username}@" if parts.username else ""
    proxied = urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{port}"))
    return proxied, parts.port or 5432


@pytest.fixture(scope="module")
def served(pg_module_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("unavailable")
    _, upstream = _through(pg_module_url, 0)
    with CuttableProxy(upstream) as proxy:
        store, _ = _through(pg_module_url, proxy.port)
        node = start_node(
            "node", store, workdir, "scaleout_agents:agent", f"grpc_port = {free_port()}\n"
        )
        try:
            wait_ready(node, 60)
            yield Served(node, proxy, pg_module_url)
        finally:
            stop_node(node)


@pytest.fixture
async def store_back(served: Served) -> AsyncIterator[None]:
    """Whatever a test did to the database, it answers and takes writes after it."""
    yield
    served.proxy.restore()
    await _set_read_only(served, False)


async def unavailable_answers(node: Node, binding: str) -> int:
    """How many requests of ``binding`` the node answered "unavailable" (its /metrics)."""
    async with httpx.AsyncClient(timeout=10) as http:
        text = (await http.get(f"{node.url}/metrics")).text
    label = f'binding="{METRIC_BINDING[binding]}"'
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith("accord_requests_total{")
        and label in line
        and 'outcome="UNAVAILABLE"' in line
    )


async def wait_for_unavailable(node: Node, binding: str, more_than: int) -> None:
    deadline = time.monotonic() + 30
    while await unavailable_answers(node, binding) <= more_than:
        assert time.monotonic() < deadline, f"{binding}: no request was answered unavailable"
        await asyncio.sleep(0.05)


async def _set_read_only(served: Served, read_only: bool) -> None:
    """The database read-only (a standby after a failover, say) or writable again, for every
    session: the node's are ended, and its new ones get the database's setting."""
    conn = await asyncpg.connect(served.dsn)
    try:
        await conn.execute("SET default_transaction_read_only = off")  # (this session)
        database = await conn.fetchval("SELECT current_database()")
        value = "on" if read_only else "off"
        await conn.execute(
            f'ALTER DATABASE "{database}" SET default_transaction_read_only = {value}'
        )
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    finally:
        await conn.close()


async def _client(served: Served, binding: str, retry: RetryPolicy | None = None) -> Client:
    return await Client.from_url(served.node.url, binding=binding, retry=retry)


async def _parked(served: Served) -> Task:
    """A task waiting for its user's answer (INPUT_REQUIRED), no run on it."""
    async with await _client(served, "JSONRPC") as client:
        task = await client.send("ask")
    assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
    return task


async def _sent_through_an_outage(
    served: Served, binding: str, *, read_only: bool = False, parked: Task | None = None
) -> Task:
    """Send a message (a new task's, or the answer to ``parked``) while the store cannot take
    it; bring the store back once the node has answered "unavailable"; the client's retry
    goes through."""
    node = served.node
    before = await unavailable_answers(node, binding)
    message = (
        text_message("pay the invoice once")
        if parked is None
        else text_message("pay the invoice once", task_id=parked.id, context_id=parked.context_id)
    )
    async with await _client(served, binding) as client:
        sending = asyncio.ensure_future(client.send(message))
        try:
            await wait_for_unavailable(node, binding, before)
        finally:
            served.proxy.restore()
            if read_only:
                await _set_read_only(served, False)
        answer = await asyncio.wait_for(sending, 30)
    assert isinstance(answer, Task)
    assert answer.status.state is TaskState.COMPLETED
    # The task holds the message once: the attempts the store refused left nothing.
    async with await _client(served, "JSONRPC") as reader:
        stored = await reader.get_task(answer.id)
    said = [part.text for m in stored.history if m.role == Role.USER for part in m.parts]
    assert said == ([] if parked is None else ["ask"]) + ["pay the invoice once"]
    return answer


async def _read_only_for_writes(served: Served) -> None:
    """The database read-only; returns once the node reads again (its sessions came back,
    read-only), so that only writes are refused."""
    await _set_read_only(served, True)
    async with httpx.AsyncClient(timeout=10) as http:
        deadline = time.monotonic() + 30
        while (await http.get(f"{served.node.url}/tasks/none", headers=HEADERS)).status_code != 404:
            assert time.monotonic() < deadline, "reads did not come back"
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_with_the_database_down_the_client_retries_until_it_is_back(
    served: Served, store_back: None, binding: str
) -> None:
    served.proxy.cut()
    await _sent_through_an_outage(served, binding)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_with_the_database_read_only_the_client_retries_until_it_takes_writes(
    served: Served, store_back: None, binding: str
) -> None:
    """The answer to a parked task: its message cannot be written (reads pass)."""
    parked = await _parked(served)
    await _read_only_for_writes(served)
    await _sent_through_an_outage(served, binding, read_only=True, parked=parked)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_stream_whose_message_cannot_be_stored_is_sent_again_until_it_can(
    served: Served, store_back: None, binding: str
) -> None:
    """SendStreamingMessage answering a parked task while writes are refused: the client
    sends the message again, as it does when a stream breaks before its first event."""
    parked = await _parked(served)
    await _read_only_for_writes(served)
    node = served.node
    before = node.log().count("read-only transaction")  # (the node logs each failed write)
    async with await _client(served, binding, RetryPolicy(max_attempts=10)) as client:

        async def follow() -> list[str]:
            states = []
            answer = text_message("stream it once", task_id=parked.id, context_id=parked.context_id)
            async for event in client.stream(answer):
                if event.status_update is not UNSET:
                    states.append(event.status_update.status.state.name)
                elif event.task is not UNSET:
                    states.append(event.task.status.state.name)
            return states

        following = asyncio.ensure_future(follow())
        deadline = time.monotonic() + 30
        try:
            while node.log().count("read-only transaction") <= before:
                assert time.monotonic() < deadline, "the stream was not refused"
                assert not following.done(), following
                await asyncio.sleep(0.05)
        finally:
            await _set_read_only(served, False)
        events = await asyncio.wait_for(following, 30)
    assert events[-1] == "COMPLETED"


@pytest.mark.parametrize("binding", BINDINGS)
async def test_each_binding_says_unavailable_and_when_to_try_again(
    served: Served, store_back: None, binding: str
) -> None:
    served.proxy.cut()
    async with await _client(served, binding, RetryPolicy(max_attempts=0)) as client:
        with pytest.raises(UnavailableError) as raised:
            await client.send("anyone there?")
    assert raised.value.retry_after == 1.0
    assert raised.value.reason == "UNAVAILABLE"
    assert (
        raised.value.code == {"JSONRPC": -32014, "HTTP+JSON": 503, "GRPC": "UNAVAILABLE"}[binding]
    )


async def test_the_http_bindings_answer_503_with_retry_after(
    served: Served, store_back: None
) -> None:
    served.proxy.cut()
    message = {"messageId": "m-503", "role": "ROLE_USER", "parts": [{"text": "hello"}]}
    async with httpx.AsyncClient(timeout=30) as http:
        jsonrpc = await http.post(
            f"{served.node.url}/",
            json={
                "jsonrpc": "2.0",
                "id": 7,
                "method": "SendMessage",
                "params": {"message": message},
            },
            headers=HEADERS,
        )
        rest = await http.get(f"{served.node.url}/tasks/some-task", headers=HEADERS)
    assert (jsonrpc.status_code, jsonrpc.headers["retry-after"]) == (503, "1")
    error = jsonrpc.json()["error"]
    assert jsonrpc.json()["id"] == 7
    assert error["code"] == -32014
    assert "try again" in error["message"]
    assert [d["@type"].rsplit(".", 1)[-1] for d in error["data"]] == ["ErrorInfo", "RetryInfo"]
    assert error["data"][0]["reason"] == "UNAVAILABLE"
    assert error["data"][1]["retryDelay"] == "1s"
    assert (rest.status_code, rest.headers["retry-after"]) == (503, "1")
    assert rest.json()["error"]["status"] == "UNAVAILABLE"
    # Nothing of the store's own message (hosts, files) reaches the caller.
    assert "127.0.0.1" not in jsonrpc.text and "127.0.0.1" not in rest.text
