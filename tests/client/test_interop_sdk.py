"""accord's client against the official a2a-sdk echo agent, over every binding."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from accord.client import (
    Client,
    SyncClient,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from accord.wire._model import (
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from sdk_servers.fixtures import RunningServer

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]


@pytest.fixture(params=BINDINGS)
async def client(
    request: pytest.FixtureRequest, sdk_server: RunningServer
) -> AsyncIterator[Client]:
    async with Client.connect(sdk_server.url, binding=request.param) as c:
        assert c.binding == request.param
        yield c


def kinds(events: list[StreamResponse]) -> list[str]:
    out = []
    for event in events:
        if isinstance(event.status_update, TaskStatusUpdateEvent):
            out.append(str(event.status_update.status.state))
        else:
            out.append(event.which)
    return out


def artifact_text(task: Task) -> str:
    return "".join(str(p.text) for a in task.artifacts for p in a.parts)


async def test_send_returns_the_completed_task(client: Client) -> None:
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.USER,
        parts=[Part(text="hello"), Part(text=" world")],
    )
    result = await client.send(message)
    assert isinstance(result, Task)
    assert result.status.state is TaskState.COMPLETED
    assert artifact_text(result) == "echo: hello world"


async def test_stream_yields_task_working_artifact_completed(client: Client) -> None:
    events = [event async for event in client.stream("hi")]
    assert kinds(events) == [
        "task",
        "TASK_STATE_WORKING",
        "artifact_update",
        "TASK_STATE_COMPLETED",
    ]
    update = events[2].artifact_update
    assert isinstance(update, TaskArtifactUpdateEvent)
    assert update.last_chunk and update.artifact.parts[0].text == "echo: hi"


async def test_get_task(client: Client) -> None:
    sent = await client.send("get me")
    assert isinstance(sent, Task)
    task = await client.get_task(sent.id, history_length=1)
    assert task.id == sent.id and task.status.state is TaskState.COMPLETED
    assert len(task.history) == 1


async def test_list_tasks_walks_every_page(client: Client) -> None:
    context_id = str(uuid.uuid4())
    ids = set()
    for i in range(5):
        sent = await client.send(f"task {i}", context_id=context_id)
        assert isinstance(sent, Task)
        ids.add(sent.id)
    first = await client.list_tasks_page(context_id=context_id, page_size=2)
    assert len(first.tasks) == 2 and first.next_page_token
    listed = [t.id async for t in client.list_tasks(context_id=context_id, page_size=2)]
    assert sorted(listed) == sorted(ids)


async def test_cancel_a_running_task(client: Client) -> None:
    started = await client.send("slow", return_immediately=True)
    assert isinstance(started, Task) and not TaskState(started.status.state).terminal
    canceled = await client.cancel(started.id)
    assert canceled.status.state is TaskState.CANCELED
    with pytest.raises(TaskNotCancelableError):
        await client.cancel(started.id)


async def test_subscribe_follows_a_running_task_to_the_end(client: Client) -> None:
    started = await client.send("slow:1.5", return_immediately=True)
    assert isinstance(started, Task)
    events = [event async for event in client.subscribe(started.id)]
    assert events[0].which == "task"
    assert kinds(events)[-2:] == ["artifact_update", "TASK_STATE_COMPLETED"]
    final = await client.get_task(started.id)
    assert artifact_text(final) == "echo: slow:1.5"


async def test_push_config_crud(client: Client) -> None:
    sent = await client.send("push")
    assert isinstance(sent, Task)
    created = await client.create_push_config(
        sent.id, "https://example.com/hook", config_id="cfg1", token="tok"
    )
    assert (created.id, created.task_id, created.url) == (
        "cfg1",
        sent.id,
        "https://example.com/hook",
    )
    fetched = await client.get_push_config(sent.id, "cfg1")
    assert fetched.token == "tok"
    assert [c.id for c in await client.list_push_configs(sent.id)] == ["cfg1"]
    await client.delete_push_config(sent.id, "cfg1")
    assert await client.list_push_configs(sent.id) == []


async def test_extended_card(client: Client) -> None:
    card = await client.get_extended_card()
    assert card.name == "SDK Echo"
    assert card.description == "Extended card of the SDK echo agent."


async def test_unknown_task_is_task_not_found(client: Client) -> None:
    with pytest.raises(TaskNotFoundError) as info:
        await client.get_task("no-such-task")
    assert info.value.reason == "TASK_NOT_FOUND"


async def test_subscribe_to_a_finished_task_is_unsupported(client: Client) -> None:
    sent = await client.send("done")
    assert isinstance(sent, Task)
    with pytest.raises(UnsupportedOperationError):
        async for _ in client.subscribe(sent.id):
            pass


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_sync_client(sdk_server: RunningServer, binding: str) -> None:
    with SyncClient(sdk_server.url, binding=binding) as client:
        task = client.send("sync")
        assert isinstance(task, Task) and artifact_text(task) == "echo: sync"
        assert kinds(list(client.stream("sync stream")))[-1] == "TASK_STATE_COMPLETED"
        assert client.get_task(task.id).id == task.id
        with pytest.raises(TaskNotFoundError):
            client.get_task("no-such-task")
        # breaking out of a stream early closes it and leaves the client usable
        for _event in client.stream("early exit"):
            break
        assert any(t.id == task.id for t in client.list_tasks(page_size=100))
