"""The official a2a-sdk client registers webhooks with ``accord serve`` (inline with a message
and with CreateTaskPushNotificationConfig) and the receiver gets every update, in order, as
StreamResponse JSON the SDK's own protobuf types parse."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import (
    AuthenticationInfo,
    GetTaskPushNotificationConfigRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from google.protobuf import json_format

from .receiver import Receiver
from .server_proc import accord_serve

pytestmark = pytest.mark.processes


def message(text: str, task_id: str = "") -> Message:
    return Message(
        role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)], task_id=task_id
    )


async def send(client: object, request: SendMessageRequest) -> Task:
    last = None
    async for item in client.send_message(request):  # type: ignore[attr-defined]
        last = item
    assert last is not None and last.HasField("task"), last
    task: Task = last.task
    return task


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_sdk_client_registers_webhooks_and_they_receive_every_update(
    tmp_path: Path, binding: str
) -> None:
    async with Receiver() as receiver, accord_serve(tmp_path, "serve_agents:ask") as (url, _):
        config = ClientConfig(streaming=False, supported_protocol_bindings=[binding])
        async with await create_client(url, client_config=config) as client:
            inline = TaskPushNotificationConfig(
                id="inline",
                url=receiver.url("/inline"),
                authentication=AuthenticationInfo(scheme="Bearer", credentials="sdk-secret"),
            )
            task = await send(
                client,
                SendMessageRequest(
                    message=message("hello"),
                    configuration=SendMessageConfiguration(task_push_notification_config=inline),
                ),
            )
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            created = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(
                    task_id=task.id, id="later", url=receiver.url("/later"), token="sdk-token"
                )
            )
            assert (created.id, created.task_id) == ("later", task.id)
            done = await send(client, SendMessageRequest(message=message("more", task.id)))
            assert done.status.state == TaskState.TASK_STATE_COMPLETED

            # inline: task, input-required, working, artifact, completed; later: the last three
            await receiver.wait_for(lambda r: len(r.accepted) == 8)
            by_path: dict[str, list[StreamResponse]] = {"/inline": [], "/later": []}
            for notification in receiver.accepted:
                parsed = json_format.Parse(notification.body, StreamResponse())
                by_path[notification.path].append(parsed)
                if notification.path == "/inline":
                    assert notification.headers["authorization"] == "Bearer sdk-secret"
                else:
                    assert notification.headers["x-a2a-notification-token"] == "sdk-token"
            assert [r.WhichOneof("payload") for r in by_path["/inline"]] == [
                "task",
                "status_update",
                "status_update",
                "artifact_update",
                "status_update",
            ]
            assert [r.WhichOneof("payload") for r in by_path["/later"]] == [
                "status_update",
                "artifact_update",
                "status_update",
            ]
            assert by_path["/later"][1].artifact_update.artifact.parts[0].text == "got: more"
            assert by_path["/later"][-1].status_update.status.state == (
                TaskState.TASK_STATE_COMPLETED
            )

            # The config stays readable after the task completed.
            kept = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id="inline")
            )
            assert kept.url == receiver.url("/inline")
            assert kept.authentication.credentials == "sdk-secret"
