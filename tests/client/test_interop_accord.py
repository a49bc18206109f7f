"""accord's client against ``accord serve`` on every binding; HTTP goes through a cutting proxy."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from accord_server import TOKEN, AccordServer
from client_events import describe

from accord.client import (
    BearerToken,
    Client,
    ResumePolicy,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnauthenticatedError,
    UnsupportedOperationError,
)
from accord.wire._model import StreamResponse, Task, TaskState


@pytest.fixture(params=["JSONRPC", "HTTP+JSON", "GRPC"])
async def client(
    request: pytest.FixtureRequest, accord_server: AccordServer
) -> AsyncIterator[Client]:
    async with connect(accord_server, request.param) as c:
        yield c


def connect(server: AccordServer, binding: str) -> Any:
    """``Client.connect`` to the test server on ``binding``, resuming broken streams at once
    (``async with`` it)."""
    return Client.connect(
        server.url,
        binding=binding,
        credentials=BearerToken(TOKEN),
        resume=ResumePolicy(initial_delay=0.05),
    )


def text_of(task: Task) -> str:
    return "".join(str(p.text) for a in task.artifacts for p in a.parts)


async def test_send_get_and_stream(client: Client) -> None:
    task = await client.send("hello")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert text_of(task) == "echo: hello"
    assert (await client.get_task(task.id)).id == task.id
    events = [describe(e) async for e in client.stream("hi")]
    assert events[0] == "task:TASK_STATE_SUBMITTED" or events[0].startswith("task:")
    assert events[-1] == "status:TASK_STATE_COMPLETED"


async def test_list_tasks_pages(client: Client) -> None:
    context_id = str(uuid.uuid4())
    ids = set()
    for i in range(5):
        sent = await client.send(f"t{i}", context_id=context_id)
        assert isinstance(sent, Task)
        ids.add(sent.id)
    first = await client.list_tasks_page(context_id=context_id, page_size=2)
    assert len(first.tasks) == 2 and first.next_page_token and first.total_size == 5
    assert {t.id async for t in client.list_tasks(context_id=context_id, page_size=2)} == ids


async def test_cancel_and_subscribe(client: Client) -> None:
    started = await client.send("slow", return_immediately=True)
    assert isinstance(started, Task)
    watcher = client.subscribe(started.id)
    first = await watcher.__anext__()
    assert first.which == "task"
    canceled = await client.cancel(started.id)
    assert canceled.status.state is TaskState.CANCELED
    rest = [describe(e) async for e in watcher]
    assert rest[-1] == "status:TASK_STATE_CANCELED"
    with pytest.raises(TaskNotCancelableError):
        await client.cancel(started.id)
    with pytest.raises(UnsupportedOperationError):
        async for _ in client.subscribe(started.id):
            pass


async def test_push_config_crud(client: Client) -> None:
    started = await client.send("slow:5", return_immediately=True)
    assert isinstance(started, Task)
    created = await client.create_push_config(
        started.id, "https://hooks.example.com/a2a", token="t"
    )
    assert created.id and created.task_id == started.id
    assert (await client.get_push_config(started.id, created.id)).url == created.url
    assert [c.id for c in await client.list_push_configs(started.id)] == [created.id]
    await client.delete_push_config(started.id, created.id)
    assert await client.list_push_configs(started.id) == []
    await client.cancel(started.id)


async def test_extended_card_and_errors(client: Client) -> None:
    card = await client.get_extended_card()
    assert card.name
    with pytest.raises(TaskNotFoundError):
        await client.get_task("no-such-task")


async def test_missing_credentials_are_refused(accord_server: AccordServer) -> None:
    async with Client.connect(accord_server.url) as anonymous:
        with pytest.raises(UnauthenticatedError):
            await anonymous.get_task("anything")


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_stream_cut_by_the_network_resumes_with_last_event_id(
    binding: str, accord_server: AccordServer
) -> None:
    def shape(description: str) -> str:  # artifact ids differ from task to task
        kind, *_, content = description.split(":")
        return f"{kind}:{content}"

    async with connect(accord_server, binding) as client:
        baseline = [shape(describe(e)) async for e in client.stream("chunks:4")]
        assert baseline[-1] == "status:TASK_STATE_COMPLETED"
        assert len(baseline) == 7  # task, working, 4 chunks, completed
        cuts = accord_server.proxy.cuts
        accord_server.proxy.arm(cut_after=2)
        events = [shape(describe(e)) async for e in client.stream("chunks:4")]
    assert accord_server.proxy.cuts == cuts + 1
    assert events == baseline
    assert any(b"last-event-id" in chunk.lower() for chunk in accord_server.proxy.requests), [
        r[:300] for r in accord_server.proxy.requests[-4:]
    ]


async def test_the_stream_of_a_continuation_follows_its_turn(client: Client) -> None:
    parked = await client.send("ask")
    assert isinstance(parked, Task) and parked.status.state is TaskState.INPUT_REQUIRED
    again = [describe(e) async for e in client.stream("ask", task_id=parked.id)]
    assert again == [
        "task:TASK_STATE_INPUT_REQUIRED",
        "status:TASK_STATE_WORKING",
        "status:TASK_STATE_INPUT_REQUIRED",
    ]
    done = [describe(e) async for e in client.stream("more", task_id=parked.id)]
    assert done[:2] == ["task:TASK_STATE_INPUT_REQUIRED", "status:TASK_STATE_WORKING"]
    assert done[2].startswith("chunk:") and done[2].endswith(":echo: more")
    assert done[3:] == ["status:TASK_STATE_COMPLETED"]


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_cut_continuation_stream_resumes_to_its_turn_end(
    binding: str, accord_server: AccordServer
) -> None:
    """Cut after the task and WORKING, the stream resumes (Last-Event-ID, over
    SubscribeToTask, which would follow the task to its terminal state) and ends where the
    turn does: at the agent's new question."""
    async with connect(accord_server, binding) as client:
        parked = await client.send("ask")
        assert isinstance(parked, Task)
        cuts = accord_server.proxy.cuts
        accord_server.proxy.arm(cut_after=2)
        stream = client.stream("ask", task_id=parked.id)
        # (a guard against a stream that never ends, not a measure of speed)
        events = await asyncio.wait_for(_describe_all(stream), 60)
    assert accord_server.proxy.cuts == cuts + 1
    assert events == [
        "task:TASK_STATE_INPUT_REQUIRED",
        "status:TASK_STATE_WORKING",
        "status:TASK_STATE_INPUT_REQUIRED",
    ]


async def _describe_all(stream: AsyncIterator[StreamResponse]) -> list[str]:
    return [describe(e) async for e in stream]
