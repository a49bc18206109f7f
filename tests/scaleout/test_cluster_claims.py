"""Remote-agent claims on two ``accord serve --agent remote`` nodes sharing one PostgreSQL
database: one claim per task across the nodes, kept across a node's restart, and a worker that
stops makes the task fail exactly once, whichever node notices."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster import Node, cluster, start_node, stop_node, wait_ready

from accord.engine._remote import LEASE_EXPIRED_MESSAGE
from accord.store._postgres import PostgresStore
from accord.wire._model import TaskState

pytestmark = pytest.mark.processes

LEASE_S = 8.0  # longer than a node's restart on a busy machine, short enough for a quick test
CONFIG = f"claim_lease_s = {LEASE_S}\n"
HEADERS = {"A2A-Version": "1.0"}


async def claim(client: httpx.AsyncClient, node: Node, task_id: str, worker: str) -> Any:
    response = await client.post(
        f"{node.url}/tasks/claims", json={"taskId": task_id, "worker": worker}, headers=HEADERS
    )
    body = response.json()
    if response.status_code == 200:
        return body["outcome"]
    assert response.status_code == 409, body
    return body["refused"]


async def task_state(client: httpx.AsyncClient, node: Node, task_id: str) -> str:
    response = await client.post(
        f"{node.url}/tasks/commands/tasks:get", json={"id": task_id}, headers=HEADERS
    )
    return str(response.json()["response"]["task"]["status"]["state"])


async def failed_statuses(pg_url: str, task_id: str) -> list[str]:
    """The FAILED status updates in the task's log, as stored."""
    store = PostgresStore(pg_url, pool_size=1)
    await store.open()
    try:
        events = await store.read_events(task_id, 0)
    finally:
        await store.close()
    texts = []
    for event in events:
        status = getattr(event.body, "status", None)
        if event.kind == "status" and status is not None and status.state == TaskState.FAILED:
            texts.append(status.message.parts[0].text)
    return texts


async def scenario(pg_url: str, workdir: Path) -> None:
    with cluster(pg_url, workdir, size=2, agent="remote", config=CONFIG) as (node_a, node_b):
        async with httpx.AsyncClient(timeout=30) as client:
            message = {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": "work"}],
            }
            response = await client.post(
                f"{node_a.url}/tasks/commands/message:send",
                json={"message": message, "configuration": {"returnImmediately": True}},
                headers=HEADERS,
            )
            task_id = response.json()["response"]["task"]["id"]

            assert await claim(client, node_a, task_id, "worker-1") == "claimed"
            response = await client.post(
                f"{node_a.url}/tasks/commands/tasks:work", json={"id": task_id}, headers=HEADERS
            )
            assert response.status_code == 202, response.text
            assert await claim(client, node_b, task_id, "worker-2") == "claimed by another worker"

            # Worker 1 renews, then node A restarts: the claim is in the database, not in A.
            assert await claim(client, node_a, task_id, "worker-1") == "renewed"
            renewed_at = time.monotonic()
            stop_node(node_a)
            node_a = start_node("node-a2", pg_url, workdir, "remote", CONFIG)
            try:
                wait_ready(node_a, 60)
                for node in (node_a, node_b):
                    assert await claim(client, node, task_id, "worker-2") == (
                        "claimed by another worker"
                    )
                assert time.monotonic() - renewed_at < LEASE_S, "the restart outlasted the lease"

                # Worker 1 stops for good. Neither node granted the claim it holds now (the
                # old node A did), both sweep for expired claims: one fails the task.
                deadline = renewed_at + LEASE_S * 3
                while (state := await task_state(client, node_b, task_id)) != "TASK_STATE_FAILED":
                    assert time.monotonic() < deadline, f"task stayed {state}"
                    await asyncio.sleep(0.2)
                assert time.monotonic() - renewed_at >= LEASE_S * 0.9  # not before the lease
            finally:
                stop_node(node_a)
            assert await failed_statuses(pg_url, task_id) == [LEASE_EXPIRED_MESSAGE]
            assert await claim(client, node_b, task_id, "worker-2") == "task is terminal"


def test_claims_hold_across_nodes_and_a_restart_and_expire_once(
    pg_module_url: str, tmp_path: Path
) -> None:
    asyncio.run(scenario(pg_module_url, tmp_path))
