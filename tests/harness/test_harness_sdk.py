"""The official a2a-sdk client holds a whole conversation with ``accord serve --agent harness``
over JSON-RPC, HTTP+JSON and gRPC: two turns parked with their sub-state, a watcher's
completion refused, a stranger's message refused with the unknown-task error, and completion
by the control part."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError
from google.protobuf import json_format, struct_pb2
from tests.harness.harness_proc import HarnessServer, harness_serve

pytestmark = pytest.mark.processes

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]
STATUS_KEY = "io.github.madarauchiha-314.tiny-harness/status"
TASK_KEY = "io.github.madarauchiha-314.tiny-harness/task"
EVENT_MEDIA_TYPE = "application/vnd.tiny-harness.event+json"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HarnessServer]:
    with harness_serve(tmp_path_factory.mktemp("harness")) as started:
        yield started


async def client_for(server: HarnessServer, binding: str, *, streaming: bool) -> Any:
    config = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    return await create_client(server.url, client_config=config)


def as_(participant: str) -> ClientCallContext:
    return ClientCallContext(service_parameters={"X-Participant-Id": participant})


def message(*parts: pb.Part, task_id: str = "") -> pb.SendMessageRequest:
    return pb.SendMessageRequest(
        message=pb.Message(
            role=pb.ROLE_USER, message_id=uuid.uuid4().hex, parts=list(parts), task_id=task_id
        )
    )


def data_part(value: dict[str, Any]) -> pb.Part:
    data = struct_pb2.Value()
    json_format.ParseDict(value, data)
    return pb.Part(data=data, media_type=EVENT_MEDIA_TYPE)


def brief(roles: dict[str, str]) -> pb.Part:
    people = [{"id": who, "kind": "human", "role": role} for who, role in roles.items()]
    return data_part(
        {"kind": "task", "payload": {"name": "n", "goal": "g", "participants": people}}
    )


CONTROL = {"kind": "control", "action": "complete"}


def metadata(value: Any) -> dict[str, Any]:
    return json_format.MessageToDict(value)


def describe(event: Any) -> str:
    if event.HasField("task"):
        return f"task:{pb.TaskState.Name(event.task.status.state)}"
    if event.HasField("status_update"):
        update = event.status_update
        state = pb.TaskState.Name(update.status.state)
        sub = metadata(update.metadata).get(STATUS_KEY, {}).get("sub_state")
        return f"status:{state}" + (f"({sub})" if sub else "")
    return event.WhichOneof("payload") or "?"


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_whole_conversation_with_the_official_client(
    server: HarnessServer, binding: str
) -> None:
    alice, bob, mallory = as_("alice"), as_("bob"), as_("mallory")
    async with await client_for(server, binding, streaming=True) as client:
        # Turn 1: a new conversation with a watcher; it parks with its sub-state.
        first = [
            e
            async for e in client.send_message(
                message(pb.Part(text="plan the offsite"), brief({"bob": "watcher"})),
                context=alice,
            )
        ]
        assert [describe(e) for e in first] == [
            "task:TASK_STATE_SUBMITTED",
            "status:TASK_STATE_WORKING",
            "status:TASK_STATE_INPUT_REQUIRED(awaiting-next-message)",
        ]
        task_id = first[0].task.id
        assert first[-1].status_update.status.message.parts[0].text == "answer 1"
        # Turn 2 continues the task and streams to its own end.
        second = [
            e
            async for e in client.send_message(
                message(pb.Part(text="two days"), task_id=task_id), context=alice
            )
        ]
        assert [describe(e) for e in second] == [
            "task:TASK_STATE_INPUT_REQUIRED",
            "status:TASK_STATE_WORKING",
            "status:TASK_STATE_INPUT_REQUIRED(awaiting-next-message)",
        ]
        task = await client.get_task(pb.GetTaskRequest(id=task_id), context=bob)
        assert metadata(task.metadata)[STATUS_KEY] == {"sub_state": "awaiting-next-message"}
        roles = {p["id"]: p["role"] for p in metadata(task.metadata)[TASK_KEY]["participants"]}
        assert roles == {"alice": "reporter", "bob": "watcher", "accord": "assignee"}
        assert [p.text for m in task.history for p in m.parts if p.text][-2:] == [
            "two days",
            "answer 2",
        ]
        # A watcher may not complete it: refused with UnsupportedOperation, as tiny-harness
        # refuses it, which the official client maps to its type; nothing kept.
        with pytest.raises(UnsupportedOperationError) as refused:
            async for _ in client.send_message(
                message(data_part(CONTROL), task_id=task_id), context=bob
            ):
                pass
        assert "a watcher cannot complete the task" in str(refused.value)
        unchanged = await client.get_task(pb.GetTaskRequest(id=task_id), context=alice)
        assert unchanged.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert len(unchanged.history) == len(task.history)
        # A stranger's message gets exactly the unknown-task error.
        errors = []
        for target in (task_id, str(uuid.uuid4())):
            with pytest.raises(TaskNotFoundError) as unknown:
                async for _ in client.send_message(
                    message(pb.Part(text="hi"), task_id=target), context=mallory
                ):
                    pass
            errors.append(str(unknown.value).replace(target, "ID"))
        assert errors[0] == errors[1]
        with pytest.raises(TaskNotFoundError):
            await client.get_task(pb.GetTaskRequest(id=task_id), context=mallory)
    # Completion by the control part (a blocking send this time).
    async with await client_for(server, binding, streaming=False) as client:
        [done] = [
            e
            async for e in client.send_message(
                message(data_part(CONTROL), task_id=task_id), context=alice
            )
        ]
        assert done.task.status.state == pb.TASK_STATE_COMPLETED
        assert done.task.status.message.parts[0].text == "completed by alice"
        assert STATUS_KEY not in metadata(done.task.metadata)
