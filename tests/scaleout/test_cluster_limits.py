"""Limits hold across nodes: three ``accord serve`` processes on one PostgreSQL database, the
official a2a-sdk client sending to all of them at once, create exactly the tenant's task limit
(and a task's config limit); every other request gets the RESOURCE_EXHAUSTED error."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from a2a.client import A2AClientError, Client, ClientConfig, create_client
from a2a.types import (
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from cluster import Node, cluster

pytestmark = pytest.mark.processes

TASK_LIMIT = 5
CONFIG_LIMIT = 2
SENDS = 24
CONFIG = f"""
tasks_per_tenant = {TASK_LIMIT}
push_configs_per_task = {CONFIG_LIMIT}
push_allow_hosts = ["127.0.0.1"]
"""
PATIENCE = 60.0  # a guard against hanging, not a timing assertion


@pytest.fixture
def limited_nodes(pg_url: str, tmp_path: Path) -> Iterator[list[Node]]:
    with cluster(pg_url, tmp_path, size=3, config=CONFIG) as nodes:
        yield nodes


async def connect(node: Node, *, streaming: bool) -> Client:
    config = ClientConfig(streaming=streaming, supported_protocol_bindings=["JSONRPC"])
    return await create_client(node.url, client_config=config)


def request(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])
    )


async def outcome(client: Client, text: str) -> str:
    """The created task's final state, or the error the request got."""
    try:
        responses = [r async for r in client.send_message(request(text))]
    except A2AClientError as exc:
        return str(exc)
    last = responses[-1]
    if last.WhichOneof("payload") == "task":
        return TaskState.Name(last.task.status.state)
    return TaskState.Name(last.status_update.status.state)


async def test_concurrent_sends_across_nodes_create_exactly_the_limit(
    limited_nodes: list[Node],
) -> None:
    clients = [
        await connect(node, streaming=streaming)
        for node in limited_nodes
        for streaming in (False, True)
    ]
    try:
        results = await asyncio.wait_for(
            asyncio.gather(
                *(outcome(clients[n % len(clients)], f"echo {n}") for n in range(SENDS))
            ),
            PATIENCE,
        )
        assert results.count("TASK_STATE_COMPLETED") == TASK_LIMIT, results
        refused = [r for r in results if r != "TASK_STATE_COMPLETED"]
        assert len(refused) == SENDS - TASK_LIMIT
        for error in refused:  # JSON-RPC ResourceExhaustedError, blocking or streamed
            assert "-32010" in error and f"already holds {TASK_LIMIT} tasks" in error, error
        for client in clients[::2]:
            listed = await client.list_tasks(ListTasksRequest(page_size=100))
            assert listed.total_size == TASK_LIMIT
            assert len(listed.tasks) == TASK_LIMIT

        # One task's push configs, created through every node at once.
        task_id = listed.tasks[0].id

        async def create(n: int) -> str:
            config = TaskPushNotificationConfig(
                task_id=task_id, id=f"c{n}", url=f"http://127.0.0.1:9/hook/{n}"
            )
            try:
                await clients[n % len(clients)].create_task_push_notification_config(config)
            except A2AClientError as exc:
                return str(exc)
            return "created"

        created = await asyncio.wait_for(asyncio.gather(*(create(n) for n in range(12))), PATIENCE)
        assert created.count("created") == CONFIG_LIMIT, created
        assert all("-32010" in r for r in created if r != "created")
        configs = await clients[1].list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
        assert len(configs.configs) == CONFIG_LIMIT
    finally:
        for client in clients:
            await client.close()
