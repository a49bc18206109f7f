"""Takeover: when the node running a task dies (``kill -9``), another node takes the task at
once, with the default settings: it sees the dead node's lock session end, instead of finding
the task at its next recovery sweep (``recovery_interval_s``, 30 s)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import httpx
import pytest
from cluster import cluster
from test_cluster_recovery import rpc, wait_for_state

pytestmark = pytest.mark.processes  # accord serve nodes

# Generous, against a shared CI machine; the sweep alone would take until 30 s after the
# surviving node started (the kill comes a few seconds after it).
TAKEOVER_DEADLINE_S = 10.0


async def scenario(pg_url: str, workdir: Path, agent: str, taken_over: str) -> str:
    # Default settings: no config file entries.
    with cluster(pg_url, workdir, size=2, agent=agent) as (node_a, node_b):
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
            await wait_for_state(client, node_b, task_id, "TASK_STATE_WORKING")

            node_a.kill()
            await wait_for_state(client, node_b, task_id, taken_over, TAKEOVER_DEADLINE_S)
            task = await rpc(client, node_b, "GetTask", {"id": task_id})
            return str(task["status"]["message"]["parts"][0]["text"])


def test_a_killed_nodes_task_is_resumed_by_the_other_node_within_seconds(
    pg_module_url: str, tmp_path: Path
) -> None:
    text = asyncio.run(
        scenario(pg_module_url, tmp_path, "scaleout_agents:resumable", "TASK_STATE_COMPLETED")
    )
    assert text.startswith("resumed by process")


def test_a_killed_nodes_task_is_failed_by_the_other_node_within_seconds(
    pg_module_url: str, tmp_path: Path
) -> None:
    """An agent that cannot resume: the other node fails the task (it says it stopped)."""
    text = asyncio.run(
        scenario(pg_module_url, tmp_path, "scaleout_agents:agent", "TASK_STATE_FAILED")
    )
    assert "stopped" in text
