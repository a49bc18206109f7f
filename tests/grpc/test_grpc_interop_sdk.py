"""The official a2a-sdk client against ``accord serve --grpc-port``: every operation over gRPC,
streaming and errors included; then the same sequence of calls over JSON-RPC, HTTP+JSON and
gRPC, whose transcripts must be equal.

The server runs the built-in conformance agent, which acts on the message id's prefix:
``tck-complete-task`` completes, ``tck-input-required`` waits for input, ``tck-message-response``
answers with a message, ``tck-stream-001`` works, streams an artifact and completes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import (
    A2AError,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from tests.processes import free_port as _free_port
from tests.processes import wait_serving

pytestmark = pytest.mark.processes

TOKEN = "grpc-interop-token"
CONFIG = f"""
[accord]
extended_card = true
require_auth = false

[accord.bearer_tokens]
"{TOKEN}" = "tester"
"""
BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    port, grpc_port = _free_port(), _free_port()
    with tempfile.TemporaryDirectory() as tmp, Path(tmp, "serve.log").open("wb") as log:
        config = Path(tmp, "accord.toml")
        config.write_text(CONFIG)
        process = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("accord")), "serve",
                "--port", str(port),
                "--grpc-port", str(grpc_port),
                "--store", "memory://",
                "--agent", "conformance",
                "--config", str(config),
                "--log-level", "warning",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            wait_serving(url, process, Path(tmp, "serve.log").read_text, 30)
            yield url
        finally:
            process.terminate()
            process.wait(10)


async def _client(base_url: str, binding: str, *, streaming: bool = True) -> Any:
    config = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    return await create_client(base_url, client_config=config)


@pytest.fixture
async def grpc_client(base_url: str) -> AsyncIterator[Any]:
    client = await _client(base_url, "GRPC")
    async with client:
        yield client


def _request(prefix: str, text: str = "hello", **config: Any) -> pb.SendMessageRequest:
    request = pb.SendMessageRequest(
        message=pb.Message(
            role=pb.ROLE_USER,
            message_id=f"{prefix}-{uuid.uuid4().hex[:8]}",
            parts=[pb.Part(text=text)],
        )
    )
    for key, value in config.items():
        setattr(request.configuration, key, value)
    return request


async def _start_waiting_task(client: Any) -> str:
    """A task left in INPUT_REQUIRED; its id. (The stream's first event is the task.)"""
    events = [e async for e in client.send_message(_request("tck-input-required"))]
    assert events[-1].WhichOneof("payload") in ("task", "status_update")
    return str(events[0].task.id)


def _state(value: int) -> str:
    return str(pb.TaskState.Name(value))


def _describe(event: pb.StreamResponse) -> str:
    kind = event.WhichOneof("payload")
    if kind == "task":
        return f"task:{_state(event.task.status.state)}"
    if kind == "status_update":
        return f"status:{_state(event.status_update.status.state)}"
    if kind == "artifact_update":
        parts = event.artifact_update.artifact.parts
        return "artifact:" + "".join(p.text for p in parts)
    return "message:" + "".join(p.text for p in event.message.parts)


async def test_card_lists_the_grpc_interface(base_url: str) -> None:
    card = httpx.get(f"{base_url}/.well-known/agent-card.json").json()
    grpc_interfaces = [i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    assert len(grpc_interfaces) == 1
    assert not grpc_interfaces[0]["url"].startswith("http")  # host:port, as gRPC clients dial it


async def test_blocking_send_over_grpc(base_url: str) -> None:
    async with await _client(base_url, "GRPC", streaming=False) as client:
        [response] = [r async for r in client.send_message(_request("tck-complete-task"))]
    assert response.task.status.state == pb.TASK_STATE_COMPLETED


async def test_every_operation_over_grpc(grpc_client: Any) -> None:
    events = [_describe(e) async for e in grpc_client.send_message(_request("tck-stream-001"))]
    assert events[0].startswith("task:")
    assert events[-1] == "status:TASK_STATE_COMPLETED"
    assert "artifact:Stream hello from TCK" in events

    [reply] = [r async for r in grpc_client.send_message(_request("tck-message-response"))]
    assert reply.WhichOneof("payload") == "message"

    done = [r async for r in grpc_client.send_message(_request("tck-complete-task"))]
    task_id = done[0].task.id
    got = await grpc_client.get_task(pb.GetTaskRequest(id=task_id, history_length=1))
    assert got.id == task_id and len(got.history) <= 1
    listed = await grpc_client.list_tasks(pb.ListTasksRequest(page_size=100))
    assert task_id in {t.id for t in listed.tasks} and listed.total_size >= 3

    config = await grpc_client.create_task_push_notification_config(
        pb.TaskPushNotificationConfig(task_id=task_id, url="https://hooks.example.com/x", token="t")
    )
    assert config.id and config.url == "https://hooks.example.com/x"
    fetched = await grpc_client.get_task_push_notification_config(
        pb.GetTaskPushNotificationConfigRequest(task_id=task_id, id=config.id)
    )
    assert fetched.token == "t"
    configs = await grpc_client.list_task_push_notification_configs(
        pb.ListTaskPushNotificationConfigsRequest(task_id=task_id)
    )
    assert [c.id for c in configs.configs] == [config.id]
    await grpc_client.delete_task_push_notification_config(
        pb.DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=config.id)
    )
    configs = await grpc_client.list_task_push_notification_configs(
        pb.ListTaskPushNotificationConfigsRequest(task_id=task_id)
    )
    assert list(configs.configs) == []

    card = await grpc_client.get_extended_agent_card(
        pb.GetExtendedAgentCardRequest(),
        context=ClientCallContext(service_parameters={"Authorization": f"Bearer {TOKEN}"}),
    )
    assert "extended" in card.description


async def test_subscribe_cancel_and_errors_over_grpc(grpc_client: Any) -> None:
    task_id = await _start_waiting_task(grpc_client)
    watcher = grpc_client.subscribe(pb.SubscribeToTaskRequest(id=task_id))
    first = await watcher.__anext__()
    assert first.task.id == task_id
    canceled = await grpc_client.cancel_task(pb.CancelTaskRequest(id=task_id))
    assert canceled.status.state == pb.TASK_STATE_CANCELED
    rest = [_describe(e) async for e in watcher]
    assert rest[-1] == "status:TASK_STATE_CANCELED"

    with pytest.raises(TaskNotCancelableError):
        await grpc_client.cancel_task(pb.CancelTaskRequest(id=task_id))
    with pytest.raises(UnsupportedOperationError):
        async for _ in grpc_client.subscribe(pb.SubscribeToTaskRequest(id=task_id)):
            pass
    with pytest.raises(TaskNotFoundError):
        await grpc_client.get_task(pb.GetTaskRequest(id="no-such-task"))
    with pytest.raises(InvalidParamsError):
        await grpc_client.list_tasks(pb.ListTasksRequest(page_size=1000))


# --- the same calls over every binding -----------------------------------------------------


async def _transcript(base_url: str, binding: str) -> list[Any]:
    """What a fixed sequence of calls observes, without ids and timestamps."""
    out: list[Any] = []
    context = ClientCallContext(service_parameters={"Authorization": f"Bearer {TOKEN}"})
    async with await _client(base_url, binding, streaming=False) as blocking:
        [done] = [r async for r in blocking.send_message(_request("tck-artifact-data"))]
        task = done.task
        out.append(("send", _state(task.status.state), [list(a.parts) for a in task.artifacts]))
        got = await blocking.get_task(pb.GetTaskRequest(id=task.id, history_length=0))
        out.append(("get", _state(got.status.state), len(got.history), len(got.artifacts)))
    async with await _client(base_url, binding) as client:
        out.append(
            (
                "stream",
                [_describe(e) async for e in client.send_message(_request("tck-stream-001"))],
            )
        )
        out.append(
            (
                "reply",
                [_describe(e) async for e in client.send_message(_request("tck-message-response"))],
            )
        )
        task_id = await _start_waiting_task(client)
        watcher = client.subscribe(pb.SubscribeToTaskRequest(id=task_id))
        first = _describe(await watcher.__anext__())
        canceled = await client.cancel_task(pb.CancelTaskRequest(id=task_id))
        out.append(
            ("cancel", first, _state(canceled.status.state), [_describe(e) async for e in watcher])
        )
        for name, call in [
            ("cancel-again", client.cancel_task(pb.CancelTaskRequest(id=task_id))),
            ("get-missing", client.get_task(pb.GetTaskRequest(id="missing"))),
            ("bad-page", client.list_tasks(pb.ListTasksRequest(page_size=101))),
            ("bad-history", client.get_task(pb.GetTaskRequest(id=task_id, history_length=-1))),
        ]:
            try:
                await call
                out.append((name, "ok"))
            except A2AError as error:
                out.append((name, type(error).__name__))
        try:
            async for _ in client.subscribe(pb.SubscribeToTaskRequest(id=task_id)):
                pass
            out.append(("subscribe-terminal", "ok"))
        except A2AError as error:
            out.append(("subscribe-terminal", type(error).__name__))
        created = await client.create_task_push_notification_config(
            pb.TaskPushNotificationConfig(task_id=task_id, url="https://hooks.example.com/y")
        )
        listed = await client.list_task_push_notification_configs(
            pb.ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
        out.append(("push", bool(created.id), created.url, len(listed.configs)))
        card = await client.get_extended_agent_card(
            pb.GetExtendedAgentCardRequest(), context=context
        )
        out.append(("card", card.name, card.description))
    return out


async def test_same_calls_same_results_on_every_binding(base_url: str) -> None:
    transcripts = {binding: await _transcript(base_url, binding) for binding in BINDINGS}
    assert transcripts["GRPC"] == transcripts["JSONRPC"] == transcripts["HTTP+JSON"]
    errors = dict(item for item in transcripts["GRPC"] if len(item) == 2)
    assert errors["cancel-again"] == "TaskNotCancelableError"
    assert errors["get-missing"] == "TaskNotFoundError"
    assert errors["subscribe-terminal"] == "UnsupportedOperationError"


# --- continuing an interrupted task, on every binding --------------------------------------


def _follow_up(prefix: str, task_id: str) -> pb.SendMessageRequest:
    request = _request(prefix, "more")
    request.message.task_id = task_id
    return request


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_stream_of_a_continuation_follows_its_turn(base_url: str, binding: str) -> None:
    """Each message to a task parked in INPUT_REQUIRED streams that turn to its own end: a
    second INPUT_REQUIRED, then (after one more message) the artifact and COMPLETED."""
    async with await _client(base_url, binding) as client:
        task_id = await _start_waiting_task(client)
        asked_again = [
            _describe(e)
            async for e in client.send_message(_follow_up("tck-input-required", task_id))
        ]
        assert asked_again == [
            "task:TASK_STATE_INPUT_REQUIRED",
            "status:TASK_STATE_WORKING",
            "status:TASK_STATE_INPUT_REQUIRED",
        ]
        finished = [
            _describe(e) async for e in client.send_message(_follow_up("tck-stream-001", task_id))
        ]
        assert finished == [
            "task:TASK_STATE_INPUT_REQUIRED",
            "status:TASK_STATE_WORKING",
            "artifact:Stream hello from TCK",
            "status:TASK_STATE_COMPLETED",
        ]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_blocking_continuation_answers_after_its_turn(base_url: str, binding: str) -> None:
    async with await _client(base_url, binding, streaming=False) as client:
        [parked] = [r async for r in client.send_message(_request("tck-input-required"))]
        assert parked.task.status.state == pb.TASK_STATE_INPUT_REQUIRED
        follow_up = _follow_up("tck-artifact-text", parked.task.id)
        [answer] = [r async for r in client.send_message(follow_up)]
    assert answer.task.status.state == pb.TASK_STATE_COMPLETED
    assert [p.text for a in answer.task.artifacts for p in a.parts] == ["Generated text content"]
