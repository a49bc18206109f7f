"""Three ``accord serve`` nodes on one PostgreSQL database, driven by the official a2a-sdk
client spread across nodes (and by raw HTTP where the SDK has no say, e.g. Last-Event-ID).

A task runs on the node that received its SendMessage; every other node serves its reads and
streams from the shared log, woken by LISTEN/NOTIFY.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from cluster import Node

pytestmark = pytest.mark.processes

COMPLETED = TaskState.TASK_STATE_COMPLETED
CANCELED = TaskState.TASK_STATE_CANCELED
PATIENCE = 60.0  # a guard against hanging, not a timing assertion


async def connect(node: Node, *, streaming: bool) -> Client:
    config = ClientConfig(streaming=streaming, supported_protocol_bindings=["JSONRPC"])
    return await create_client(node.url, client_config=config)


@pytest.fixture
async def clients(nodes: list[Node]) -> AsyncIterator[tuple[list[Client], list[Client]]]:
    """(blocking clients, streaming clients), one of each per node."""
    blocking = [await connect(node, streaming=False) for node in nodes]
    streaming = [await connect(node, streaming=True) for node in nodes]
    yield blocking, streaming
    for client in blocking + streaming:
        await client.close()


def request(text: str, *, immediately: bool = False) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)]),
        configuration={"return_immediately": True} if immediately else None,
    )


async def send(client: Client, req: SendMessageRequest) -> Task:
    [response] = [r async for r in client.send_message(req)]
    assert response.WhichOneof("payload") == "task"
    return response.task


def state_of(event: StreamResponse) -> TaskState | None:
    kind = event.WhichOneof("payload")
    if kind == "task":
        return event.task.status.state
    if kind == "status_update":
        return event.status_update.status.state
    return None


def chunks(events: list[StreamResponse]) -> list[str]:
    return [
        part.text
        for event in events
        if event.WhichOneof("payload") == "artifact_update"
        for part in event.artifact_update.artifact.parts
    ]


async def follow(client: Client, task_id: str) -> list[StreamResponse]:
    return [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id))]


async def test_streams_on_every_node_see_a_task_run_on_another_in_order(
    clients: tuple[list[Client], list[Client]],
) -> None:
    blocking, streaming = clients
    # Runs on node A (it received the message); followed from B and C, and from A itself.
    # Long enough (2 s) that the followers join before it ends.
    task = await send(blocking[0], request("tick 40 0.05", immediately=True))
    streams = await asyncio.wait_for(
        asyncio.gather(*(follow(client, task.id) for client in streaming)), PATIENCE
    )
    expected = [f"chunk {i};" for i in range(40)]
    for events in streams:
        assert events[0].task.id == task.id
        assert state_of(events[-1]) == COMPLETED
        # Whatever the snapshot already held, plus every later chunk once and in order.
        held = [p.text for a in events[0].task.artifacts for p in a.parts]
        assert held + chunks(events) == expected
    done = await blocking[2].get_task(GetTaskRequest(id=task.id))
    assert [p.text for p in done.artifacts[0].parts] == expected


async def test_tasks_sent_to_every_node_are_listed_by_every_node(
    clients: tuple[list[Client], list[Client]],
) -> None:
    blocking, _ = clients
    context = str(uuid.uuid4())
    sent = []
    for client in blocking:
        req = request("hello")
        req.message.context_id = context
        sent.append(await send(client, req))
    assert all(task.status.state == COMPLETED for task in sent)
    for client in blocking:
        listed = await client.list_tasks(ListTasksRequest(context_id=context))
        assert sorted(t.id for t in listed.tasks) == sorted(t.id for t in sent)
        assert listed.total_size == 3


def _sse(response: httpx.Response) -> AsyncIterator[tuple[int, dict[str, Any]]]:
    async def events() -> AsyncIterator[tuple[int, dict[str, Any]]]:
        event_id: int | None = None
        data: list[str] = []
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                event_id = int(line[3:].strip())
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "" and data:
                assert event_id is not None
                body = json.loads("\n".join(data))
                yield event_id, body.get("result", body)
                event_id, data = None, []

    return events()


def _texts(body: dict[str, Any]) -> list[str]:
    """Artifact texts a StreamResponse (as JSON) carries: a task's, or one update's."""
    if "task" in body:
        return [p["text"] for a in body["task"].get("artifacts", []) for p in a["parts"]]
    if "artifactUpdate" in body:
        return [p["text"] for p in body["artifactUpdate"]["artifact"]["parts"]]
    return []


def _subscribe_call(task_id: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}


async def test_a_stream_dropped_on_one_node_resumes_on_another(
    nodes: list[Node], clients: tuple[list[Client], list[Client]]
) -> None:
    blocking, _ = clients
    task = await send(blocking[0], request("tick 30 0.05", immediately=True))
    headers = {"A2A-Version": "1.0", "Accept": "text/event-stream"}
    seen: list[int] = []
    texts: list[str] = []
    async with httpx.AsyncClient(timeout=PATIENCE) as http:
        # Follow from node B, drop the connection after a few events...
        async with http.stream(
            "POST", nodes[1].url, json=_subscribe_call(task.id), headers=headers
        ) as response:
            async for event_id, body in _sse(response):
                seen.append(event_id)
                texts += _texts(body)
                if len(seen) == 5:
                    break
        # ... and resume on node C after the last event received.
        resumed = {"Last-Event-ID": str(seen[-1]), **headers}
        async with http.stream(
            "POST", nodes[2].url, json=_subscribe_call(task.id), headers=resumed
        ) as response:
            final = None
            async for event_id, body in _sse(response):
                seen.append(event_id)
                texts += _texts(body)
                final = body
    assert seen == list(range(seen[0], seen[0] + len(seen)))  # no gap, no duplicate
    assert texts == [f"chunk {i};" for i in range(30)]
    assert final is not None and final["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_cancel_on_another_node_ends_the_task_everywhere(
    clients: tuple[list[Client], list[Client]],
) -> None:
    blocking, streaming = clients
    task = await send(blocking[0], request("slow", immediately=True))
    watcher = streaming[2].subscribe(SubscribeToTaskRequest(id=task.id))
    first = await anext(watcher)  # node C follows the task
    assert first.task.id == task.id
    canceled = await blocking[1].cancel_task(CancelTaskRequest(id=task.id))
    assert canceled.status.state == CANCELED

    async def rest() -> list[StreamResponse]:
        return [event async for event in watcher]

    events = await asyncio.wait_for(rest(), PATIENCE)
    assert state_of(events[-1]) == CANCELED
    for client in blocking:
        assert (await client.get_task(GetTaskRequest(id=task.id))).status.state == CANCELED


async def test_a_blocking_send_on_one_node_returns_when_another_node_cancels(
    clients: tuple[list[Client], list[Client]],
) -> None:
    blocking, _ = clients
    context = str(uuid.uuid4())
    req = request("slow")
    req.message.context_id = context
    waiting = asyncio.ensure_future(send(blocking[0], req))  # blocks on node A
    task_id = ""
    while not task_id:  # the task shows up on node C once its creation committed
        listed = await blocking[2].list_tasks(ListTasksRequest(context_id=context))
        task_id = listed.tasks[0].id if listed.tasks else ""
        await asyncio.sleep(0.05)
    await blocking[1].cancel_task(CancelTaskRequest(id=task_id))
    answered = await asyncio.wait_for(waiting, 15)
    assert (answered.id, answered.status.state) == (task_id, CANCELED)
