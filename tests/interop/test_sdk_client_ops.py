"""The official a2a-sdk client against ``accord serve``, every operation, over JSON-RPC and
HTTP+JSON."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from a2a.client import A2AClientError, Client, ClientCallContext, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
from accord_server_proc import BEARER_TOKEN, AccordServer

BINDINGS = ["JSONRPC", "HTTP+JSON"]

COMPLETED = TaskState.TASK_STATE_COMPLETED
TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_REJECTED,
}


@pytest.fixture(params=BINDINGS)
def binding(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def connect(server: AccordServer, binding: str, *, streaming: bool = True) -> Client:
    config = ClientConfig(streaming=streaming, supported_protocol_bindings=[binding])
    return await create_client(server.url, client_config=config)


@pytest.fixture
async def client(accord_server: AccordServer, binding: str) -> AsyncIterator[Client]:
    """A streaming client: send_message uses SendStreamingMessage."""
    async with await connect(accord_server, binding) as c:
        yield c


@pytest.fixture
async def blocking(accord_server: AccordServer, binding: str) -> AsyncIterator[Client]:
    """A non-streaming client: send_message uses SendMessage."""
    async with await connect(accord_server, binding, streaming=False) as c:
        yield c


def request(text: str, **kw: Any) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)]),
        **kw,
    )


def follow_up(task: Task, text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            task_id=task.id,
            context_id=task.context_id,
            parts=[Part(text=text)],
        )
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


def chunks(events: list[StreamResponse]) -> str:
    return "".join(
        part.text
        for event in events
        if event.WhichOneof("payload") == "artifact_update"
        for part in event.artifact_update.artifact.parts
    )


# --- send, stream, get ---------------------------------------------------------------------


async def test_blocking_send_returns_the_completed_task(blocking: Client) -> None:
    task = await send(blocking, request("hello"))
    assert task.status.state == COMPLETED
    assert [p.text for a in task.artifacts for p in a.parts] == ["echo: hello"]
    assert task.history[0].parts[0].text == "hello"


async def test_streaming_send_yields_task_then_updates_until_completed(client: Client) -> None:
    events = [e async for e in client.send_message(request("tick 3 0.01"))]
    assert events[0].WhichOneof("payload") == "task"
    assert state_of(events[-1]) == COMPLETED
    assert chunks(events) == "chunk 0;chunk 1;chunk 2;"
    ids = {
        e.task.id if e.HasField("task") else getattr(e, e.WhichOneof("payload")).task_id
        for e in events
    }
    assert len(ids) == 1


async def test_a_direct_reply_is_one_message_on_both_send_operations(
    client: Client, blocking: Client
) -> None:
    for c in (blocking, client):
        events = [e async for e in c.send_message(request("direct hi"))]
        assert [e.WhichOneof("payload") for e in events] == ["message"]
        assert events[0].message.role == Role.ROLE_AGENT
        assert events[0].message.parts[0].text == "direct: hi"


async def test_get_task_honours_history_length(blocking: Client) -> None:
    first = await send(blocking, request("ask"))
    assert first.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    done = await send(blocking, follow_up(first, "more"))
    assert done.status.state == COMPLETED

    full = await blocking.get_task(GetTaskRequest(id=first.id))
    assert len(full.history) >= 2
    one = await blocking.get_task(GetTaskRequest(id=first.id, history_length=1))
    assert [m.message_id for m in one.history] == [full.history[-1].message_id]
    none = await blocking.get_task(GetTaskRequest(id=first.id, history_length=0))
    assert len(none.history) == 0
    assert none.status.state == COMPLETED


async def test_return_immediately_answers_before_the_agent_finishes(blocking: Client) -> None:
    task = await send(blocking, request("slow", configuration={"return_immediately": True}))
    assert task.status.state not in TERMINAL
    await blocking.cancel_task(CancelTaskRequest(id=task.id))


# --- list ----------------------------------------------------------------------------------


async def test_list_tasks_pages_through_one_context_and_filters_by_state(
    blocking: Client,
) -> None:
    context = f"ctx-{uuid.uuid4()}"
    created = []
    for index in range(5):
        req = request(f"item {index}")
        req.message.context_id = context
        created.append((await send(blocking, req)).id)
    asked = request("ask")
    asked.message.context_id = context
    waiting = await send(blocking, asked)
    created.append(waiting.id)

    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = await blocking.list_tasks(
            ListTasksRequest(context_id=context, page_size=2, page_token=token)
        )
        pages += 1
        assert page.total_size == 6
        assert len(page.tasks) <= 2
        seen.extend(t.id for t in page.tasks)
        token = page.next_page_token
        if not token:
            break
    assert pages == 3
    assert sorted(seen) == sorted(created)
    assert len(set(seen)) == len(seen)

    waiting_only = await blocking.list_tasks(
        ListTasksRequest(context_id=context, status=TaskState.TASK_STATE_INPUT_REQUIRED)
    )
    assert [t.id for t in waiting_only.tasks] == [waiting.id]
    assert waiting_only.total_size == 1

    without = await blocking.list_tasks(
        ListTasksRequest(context_id=context, page_size=10, include_artifacts=False)
    )
    assert all(len(t.artifacts) == 0 for t in without.tasks)
    with_artifacts = await blocking.list_tasks(
        ListTasksRequest(context_id=context, page_size=10, include_artifacts=True)
    )
    assert sum(len(t.artifacts) for t in with_artifacts.tasks) == 5


# --- cancel --------------------------------------------------------------------------------


async def test_cancel_stops_a_running_task(blocking: Client) -> None:
    task = await send(blocking, request("slow", configuration={"return_immediately": True}))
    canceled = await blocking.cancel_task(CancelTaskRequest(id=task.id))
    assert canceled.id == task.id
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    again = await blocking.get_task(GetTaskRequest(id=task.id))
    assert again.status.state == TaskState.TASK_STATE_CANCELED
    with pytest.raises(TaskNotCancelableError):
        await blocking.cancel_task(CancelTaskRequest(id=task.id))


# --- subscribe and resubscribe --------------------------------------------------------------


async def test_subscribe_follows_a_task_to_its_end(client: Client, blocking: Client) -> None:
    task = await send(blocking, request("tick 4 0.05", configuration={"return_immediately": True}))
    events = [e async for e in client.subscribe(SubscribeToTaskRequest(id=task.id))]
    assert events[0].WhichOneof("payload") == "task"
    assert events[0].task.id == task.id
    assert state_of(events[-1]) == COMPLETED
    done = await blocking.get_task(GetTaskRequest(id=task.id))
    assert "".join(p.text for p in done.artifacts[0].parts) == "chunk 0;chunk 1;chunk 2;chunk 3;"


async def test_subscribe_follows_an_input_required_task_through_the_next_turn(
    client: Client, blocking: Client
) -> None:
    waiting = await send(blocking, request("ask"))
    stream = client.subscribe(SubscribeToTaskRequest(id=waiting.id))
    first = await anext(stream)
    assert first.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    await send(blocking, follow_up(waiting, "now"))
    rest = [e async for e in stream]
    assert state_of(rest[-1]) == COMPLETED


async def test_resubscribe_after_disconnect_sees_the_rest(client: Client, blocking: Client) -> None:
    task = await send(blocking, request("tick 8 0.1", configuration={"return_immediately": True}))
    stream = client.subscribe(SubscribeToTaskRequest(id=task.id))
    before = [await anext(stream), await anext(stream)]
    await stream.aclose()  # the client goes away; the task goes on
    assert before[0].task.id == task.id

    again = [e async for e in client.subscribe(SubscribeToTaskRequest(id=task.id))]
    snapshot = again[0].task
    assert snapshot.id == task.id
    assert state_of(again[-1]) == COMPLETED
    # What the snapshot already holds plus the updates after it make the whole artifact.
    held = "".join(p.text for a in snapshot.artifacts for p in a.parts)
    assert held + chunks(again[1:]) == "".join(f"chunk {i};" for i in range(8))


# --- push-notification configs -------------------------------------------------------------


async def test_push_config_crud(blocking: Client) -> None:
    task = await send(blocking, request("hello"))
    created = await blocking.create_task_push_notification_config(
        TaskPushNotificationConfig(
            task_id=task.id, id="cfg-1", url="https://example.com/hook", token="tok"
        )
    )
    assert (created.task_id, created.id, created.url) == (
        task.id,
        "cfg-1",
        "https://example.com/hook",
    )
    got = await blocking.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=task.id, id="cfg-1")
    )
    assert got.url == "https://example.com/hook"
    assert got.token == "tok"
    listed = await blocking.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    assert [c.id for c in listed.configs] == ["cfg-1"]
    await blocking.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="cfg-1")
    )
    listed = await blocking.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    assert list(listed.configs) == []
    with pytest.raises(TaskNotFoundError):
        await blocking.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id="cfg-1")
        )


# --- extended card -------------------------------------------------------------------------


async def test_extended_card_needs_the_bearer_token(blocking: Client) -> None:
    authorized = ClientCallContext(service_parameters={"Authorization": f"Bearer {BEARER_TOKEN}"})
    card = await blocking.get_extended_agent_card(GetExtendedAgentCardRequest(), context=authorized)
    assert "extended" in card.description
    assert card.capabilities.extended_agent_card


async def test_extended_card_without_credentials_is_refused(
    accord_server: AccordServer, binding: str
) -> None:
    async with await connect(accord_server, binding, streaming=False) as c:
        # The SDK has no class for "unauthenticated": it reports the code or the HTTP status.
        with pytest.raises(A2AClientError, match=r"-32012|401"):
            await c.get_extended_agent_card(GetExtendedAgentCardRequest())


# --- errors --------------------------------------------------------------------------------


async def test_unknown_task_is_task_not_found(blocking: Client) -> None:
    with pytest.raises(TaskNotFoundError):
        await blocking.get_task(GetTaskRequest(id="no-such-task"))
    with pytest.raises(TaskNotFoundError):
        await blocking.cancel_task(CancelTaskRequest(id="no-such-task"))


async def test_unknown_task_on_subscribe_is_task_not_found(client: Client) -> None:
    with pytest.raises(TaskNotFoundError):
        async for _ in client.subscribe(SubscribeToTaskRequest(id="no-such-task")):
            pass


async def test_terminal_task_refuses_messages_and_subscriptions(
    client: Client, blocking: Client
) -> None:
    task = await send(blocking, request("hello"))
    with pytest.raises(UnsupportedOperationError):
        await send(blocking, follow_up(task, "again"))
    with pytest.raises(UnsupportedOperationError):
        async for _ in client.subscribe(SubscribeToTaskRequest(id=task.id)):
            pass


async def test_unsupported_version_is_refused(blocking: Client) -> None:
    future = ClientCallContext(service_parameters={"A2A-Version": "99.0"})
    with pytest.raises(VersionNotSupportedError):
        await blocking.get_task(GetTaskRequest(id="anything"), context=future)
    with pytest.raises(VersionNotSupportedError):
        await send_with(blocking, request("hello"), future)


async def send_with(client: Client, req: SendMessageRequest, ctx: ClientCallContext) -> None:
    async for _ in client.send_message(req, context=ctx):
        pass


async def test_concurrent_sends_all_complete(blocking: Client) -> None:
    tasks = await asyncio.gather(*(send(blocking, request(f"n{i}")) for i in range(10)))
    assert {t.status.state for t in tasks} == {COMPLETED}
    assert len({t.id for t in tasks}) == 10
