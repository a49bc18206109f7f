"""Push delivery on several nodes: every node's dispatcher claims due deliveries from the
shared database; each event reaches each webhook once, whichever node ran the task, and at
least once when the node delivering it dies."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    TaskPushNotificationConfig,
    TaskState,
)
from cluster import Node, cluster, start_node, stop_node, wait_ready
from google.protobuf import json_format

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for push.receiver

from push.receiver import Received, Receiver

pytestmark = pytest.mark.processes

PUSH = """
push_allow_hosts = ["127.0.0.1"]
push_timeout_s = 2.0
push_retry_base_s = 0.05
push_retry_max_s = 0.2
push_poll_interval_s = 0.1
"""
TASKS = 12
CHUNKS = 5


@pytest.fixture(scope="module")
def push_nodes(
    pg_module_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Node]]:
    with cluster(pg_module_url, tmp_path_factory.mktemp("push"), size=3, config=PUSH) as nodes:
        yield nodes


async def test_each_event_reaches_each_webhook_once_across_nodes(push_nodes: list[Node]) -> None:
    async with Receiver() as receiver:
        for index in range(TASKS):
            node = push_nodes[index % len(push_nodes)]
            config = ClientConfig(streaming=False, supported_protocol_bindings=["JSONRPC"])
            async with await create_client(node.url, client_config=config) as client:
                webhook = TaskPushNotificationConfig(id="hook", url=receiver.url(f"/t{index}"))
                request = SendMessageRequest(
                    message=Message(
                        role=Role.ROLE_USER,
                        message_id=str(uuid.uuid4()),
                        parts=[Part(text=f"tick {CHUNKS} 0.01")],
                    ),
                    configuration=SendMessageConfiguration(task_push_notification_config=webhook),
                )
                [response] = [r async for r in client.send_message(request)]
                assert response.task.status.state == TaskState.TASK_STATE_COMPLETED

        def final(notification_body: bytes) -> bool:
            parsed = json_format.Parse(notification_body, StreamResponse())
            return parsed.status_update.status.state == TaskState.TASK_STATE_COMPLETED

        # task, working, CHUNKS artifacts, completed: per webhook, each once and in order.
        expected = 1 + 1 + CHUNKS + 1
        await receiver.wait_for(
            lambda r: sum(final(n.body) for n in r.accepted) == TASKS, timeout=60
        )
        by_path: dict[str, list[str]] = {}
        for notification in receiver.accepted:
            by_path.setdefault(notification.path, []).append(notification.event_id)
        assert sorted(by_path) == sorted(f"/t{i}" for i in range(TASKS))
        for path, ids in by_path.items():
            assert not [i for i, n in Counter(ids).items() if n > 1], (path, ids)
            seqs = [int(i.rsplit(":", 1)[1]) for i in ids]
            assert seqs == sorted(seqs) and len(seqs) == expected, (path, ids)


async def test_deliveries_a_killed_node_held_are_finished_by_another(
    pg_url: str, tmp_path: Path
) -> None:
    """SIGKILL of a node in the middle of a delivery: once its claim's lease runs out, another
    node delivers from the durable cursor. At least once: the event being posted when the
    node died may arrive twice; none is missing, and they are first accepted in order."""
    first_request = asyncio.Event()

    async def hang_first(request: Received, index: int) -> int:
        if index == 0:
            first_request.set()
            await asyncio.Event().wait()  # never answers: the sender is stuck on it
        return 200

    nodes: list[Node] = []
    try:
        async with Receiver(hang_first) as receiver:
            for name in ("node-a", "node-b"):
                node = start_node(name, pg_url, tmp_path, "scaleout_agents:agent", PUSH)
                nodes.append(node)
                await asyncio.to_thread(wait_ready, node, 60.0)
            runner, survivor = nodes
            config = ClientConfig(streaming=False, supported_protocol_bindings=["JSONRPC"])
            async with await create_client(runner.url, client_config=config) as client:
                webhook = TaskPushNotificationConfig(id="hook", url=receiver.url("/hook"))
                request = SendMessageRequest(
                    message=Message(
                        role=Role.ROLE_USER,
                        message_id=str(uuid.uuid4()),
                        parts=[Part(text=f"tick {CHUNKS} 0.01")],
                    ),
                    configuration=SendMessageConfiguration(task_push_notification_config=webhook),
                )
                [response] = [r async for r in client.send_message(request)]
            task_id = response.task.id
            assert response.task.status.state == TaskState.TASK_STATE_COMPLETED
            await asyncio.wait_for(first_request.wait(), 60)
            runner.kill()  # whichever node holds the claim, the other one must finish
            expected = [f"{task_id}:{seq}" for seq in range(1, CHUNKS + 4)]
            await receiver.wait_for(lambda r: r.accepted_ids() == expected, timeout=60)
            assert survivor.process.poll() is None
    finally:
        for node in nodes:
            stop_node(node)
