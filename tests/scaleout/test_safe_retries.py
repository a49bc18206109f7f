"""The dropped connection: a server carries a SendMessage out, the connection is cut before
its answer reaches the client, and accord's client sends it again — and gets the same task,
while the store holds one. On one server (SQLite), on every binding; and on two nodes on
PostgreSQL with the retry landing on the other node."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest
from cluster import Node, start_node, stop_node, wait_ready
from dropping_proxy import DroppingProxy
from tests.processes import free_port

from accord.client import Client
from accord.wire._codec import decode
from accord.wire._model import AgentCard, Role, Task

pytestmark = pytest.mark.processes

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]


def _config(grpc_port: int) -> str:
    return f"grpc_port = {grpc_port}\n"


@pytest.fixture
def single(tmp_path: Path) -> Iterator[list[tuple[Node, int]]]:
    grpc_port = free_port()
    node = start_node(
        "solo", f"sqlite:///{tmp_path / 'tasks.db'}", tmp_path, "echo", _config(grpc_port)
    )
    try:
        wait_ready(node, 60)
        yield [(node, grpc_port)]
    finally:
        stop_node(node)


@pytest.fixture
def pair(pg_url: str, tmp_path: Path) -> Iterator[list[tuple[Node, int]]]:
    started: list[tuple[Node, int]] = []
    try:
        for name in ("node-a", "node-b"):
            grpc_port = free_port()
            node = start_node(name, pg_url, tmp_path, "echo", _config(grpc_port))
            started.append((node, grpc_port))
            wait_ready(node, 60)
        yield started
    finally:
        for node, _ in started:
            stop_node(node)


def _port(node: Node, grpc_port: int, binding: str) -> int:
    return grpc_port if binding == "GRPC" else int(node.url.rsplit(":", 1)[1])


def _card_through(node: Node, binding: str, proxy: DroppingProxy) -> AgentCard:
    """The node's card with the interface of ``binding`` pointing at the proxy."""
    card = decode(httpx.get(f"{node.url}/.well-known/agent-card.json").content, AgentCard)
    url = f"127.0.0.1:{proxy.port}" if binding == "GRPC" else f"http://127.0.0.1:{proxy.port}"
    interfaces = [
        msgspec.structs.replace(i, url=url)
        for i in card.supported_interfaces
        if i.protocol_binding == binding
    ]
    return msgspec.structs.replace(card, supported_interfaces=interfaces)


async def _lose_one_answer(nodes: list[tuple[Node, int]], binding: str) -> None:
    upstreams = [_port(node, grpc, binding) for node, grpc in nodes]
    with DroppingProxy(upstreams) as proxy:
        card = _card_through(nodes[0][0], binding, proxy)
        async with Client(card, binding=binding) as client:
            proxy.drop_next_answer = True
            answer = await client.send("pay the invoice once")
        assert proxy.dropped == 1  # the first answer was lost ...
        assert proxy.connections >= 2  # ... and the retry went out again (to the last node)
    assert isinstance(answer, Task)
    # Read the store through the first node: one task, with the message once.
    async with Client.connect(nodes[0][0].url) as reader:
        page = await reader.list_tasks_page()
    assert page.total_size == 1
    [stored] = page.tasks
    assert stored.id == answer.id
    said = [m for m in stored.history if m.role == Role.USER]
    assert [part.text for m in said for part in m.parts] == ["pay the invoice once"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_lost_answer_is_retried_into_the_same_task(
    single: list[tuple[Node, int]], binding: str
) -> None:
    await _lose_one_answer(single, binding)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_retry_on_another_postgresql_node_gets_the_same_task(
    pair: list[tuple[Node, int]], binding: str
) -> None:
    await _lose_one_answer(pair, binding)
