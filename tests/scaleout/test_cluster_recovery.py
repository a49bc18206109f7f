"""Recovery in a cluster: a starting node leaves the tasks live nodes run alone, and the
tasks of a node that died are failed by the others."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from cluster import Node, cluster, start_node, stop_node, wait_ready
from tests.waiting import until

pytestmark = pytest.mark.processes

HEADERS = {"A2A-Version": "1.0"}
CONFIG = "recovery_interval_s = 0.5\n"


async def rpc(client: httpx.AsyncClient, node: Node, method: str, params: dict[str, Any]) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await client.post(f"{node.url}/", json=body, headers=HEADERS)
    answer = response.json()
    assert "result" in answer, answer
    return answer["result"]


async def state(client: httpx.AsyncClient, node: Node, task_id: str) -> str:
    task = await rpc(client, node, "GetTask", {"id": task_id})
    return str(task["status"]["state"])


async def wait_for_state(
    client: httpx.AsyncClient, node: Node, task_id: str, wanted: str, patience: float = 30.0
) -> None:
    deadline = time.monotonic() + patience
    while (current := await state(client, node, task_id)) != wanted:
        assert time.monotonic() < deadline, f"task {task_id} stayed {current}, not {wanted}"
        await asyncio.sleep(0.1)


async def sweeps(client: httpx.AsyncClient, node: Node) -> int:
    """How many recovery sweeps (the start-up one included) the node has run: its /metrics."""
    metrics = (await client.get(f"{node.url}/metrics")).text
    found = re.search(r"^accord_recovery_sweeps_total (\S+)$", metrics, re.MULTILINE)
    return int(float(found.group(1))) if found else 0


async def swept(client: httpx.AsyncClient, node: Node, count: int) -> None:
    """Once the node has run ``count`` recovery sweeps in all."""

    async def done() -> bool:
        return await sweeps(client, node) >= count

    await until(done, f"{count} recovery sweeps on {node.name}")


async def kill_lock_session(pg_url: str) -> None:
    """End the one session that holds task locks (node A's), as an administrator might."""
    conn = await asyncpg.connect(pg_url)
    try:
        pids = await conn.fetch(
            "SELECT DISTINCT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE l.locktype = 'advisory' AND d.datname = current_database()"
        )
        assert len(pids) == 1, pids
        assert await conn.fetchval("SELECT pg_terminate_backend($1)", pids[0]["pid"])
    finally:
        await conn.close()


async def scenario(pg_url: str, workdir: Path) -> None:
    with cluster(pg_url, workdir, size=1, config=CONFIG) as (node_a,):
        async with httpx.AsyncClient(timeout=30) as client:
            message = {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": "slow"}],
            }
            created = await rpc(
                client,
                node_a,
                "SendMessage",
                {"message": message, "configuration": {"returnImmediately": True}},
            )
            task_id = created["task"]["id"]
            await wait_for_state(client, node_a, task_id, "TASK_STATE_WORKING")

            node_b = start_node("node-b", pg_url, workdir, "scaleout_agents:agent", CONFIG)
            try:
                wait_ready(node_b, 60)
                await swept(client, node_b, 3)  # node B's start-up recovery and two sweeps
                assert await state(client, node_b, task_id) == "TASK_STATE_WORKING"

                # Node A's lock connection breaks while node A lives: it reconnects and
                # takes the lock back, so node B's sweeps still leave the task alone.
                await kill_lock_session(pg_url)
                await until(lambda: "took back" in node_a.log(), "node A to take its locks back")
                await swept(client, node_b, await sweeps(client, node_b) + 2)
                assert await state(client, node_b, task_id) == "TASK_STATE_WORKING"

                node_a.kill()
                await wait_for_state(client, node_b, task_id, "TASK_STATE_FAILED")
                task = await rpc(client, node_b, "GetTask", {"id": task_id})
                assert "stopped" in task["status"]["message"]["parts"][0]["text"]
            finally:
                stop_node(node_b)


def test_a_starting_node_spares_live_tasks_and_recovers_a_dead_nodes(
    pg_module_url: str, tmp_path: Path
) -> None:
    asyncio.run(scenario(pg_module_url, tmp_path))
