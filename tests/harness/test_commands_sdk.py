"""The built-in commands over A2A with the official a2a-sdk client, against ``accord serve
--agent harness`` (JSON-RPC, HTTP+JSON and gRPC): each answer's shape and metadata, the
task's state unchanged, each change an event of the task's log, the model allowlist, a
watcher refused, an unregistered ``/x`` answered by the model, the commands on the card, and
the example plugin's command and hook."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import UnsupportedOperationError
from google.protobuf import json_format, struct_pb2
from tests.harness.harness_proc import HarnessServer, start, write_settings
from tests.harness.test_harness_sdk import as_, client_for
from tests.harness.test_harness_sdk import message as request

pytestmark = pytest.mark.processes

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]
ROOT = Path(__file__).resolve().parents[2]
STATUS_KEY = "io.github.madarauchiha-314.tiny-harness/status"
TASK_KEY = "io.github.madarauchiha-314.tiny-harness/task"
COMMANDS_URI = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1"
EVENT_MEDIA_TYPE = "application/vnd.tiny-harness.event+json"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HarnessServer]:
    workdir = tmp_path_factory.mktemp("commands")
    other = workdir / "other.json"
    other.write_text(json.dumps([{"text": "other model"}] * 20))
    plugin = ROOT / "examples/harness/plugins/house-rules"
    config = write_settings(workdir, f'models = ["scripted:{other}"]\nplugins = ["{plugin}"]\n')
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), path]))  # examples.*
    try:
        started = start(workdir, f"sqlite:///{workdir / 'tasks.db'}", config)
    finally:
        if path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = path
    try:
        yield started
    finally:
        started.stop()


def text(value: str) -> pb.Part:
    return pb.Part(text=value)


def brief(roles: dict[str, str]) -> pb.Part:
    people = [{"id": who, "kind": "human", "role": role} for who, role in roles.items()]
    data = struct_pb2.Value()
    json_format.ParseDict(
        {"kind": "task", "payload": {"name": "n", "goal": "g", "participants": people}}, data
    )
    return pb.Part(data=data, media_type=EVENT_MEDIA_TYPE)


def as_dict(value: Any) -> dict[str, Any]:
    found: dict[str, Any] = json_format.MessageToDict(value)
    return found


async def ask(client: Any, who: str, words: str, task_id: str) -> pb.Task:
    """A blocking send: the task once the command is answered."""
    [event] = [e async for e in client.send_message(request(text(words), task_id=task_id),
                                                    context=as_(who))]  # fmt: skip
    task: pb.Task = event.task
    return task


def answer(task: pb.Task) -> tuple[str, dict[str, Any]]:
    message = task.status.message
    return message.parts[0].text, as_dict(message.metadata)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_each_built_in_command_with_the_official_client(
    server: HarnessServer, binding: str
) -> None:
    async with await client_for(server, binding, streaming=False) as client:
        [opened] = [
            e
            async for e in client.send_message(
                request(text("plan the offsite"), brief({"bob": "watcher"})), context=as_("alice")
            )
        ]
        task_id = opened.task.id
        parked = len(opened.task.history)

        status = await ask(client, "alice", "/status", task_id)
        said, metadata = answer(status)
        assert metadata == {"command": "status"}
        assert status.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert as_dict(status.metadata)[STATUS_KEY] == {"sub_state": "awaiting-next-message"}
        assert said.splitlines()[1:4] == [
            "State: INPUT_REQUIRED · awaiting-next-message",
            "Participants: alice (reporter), bob (watcher), accord (assignee)",
            f"Model: scripted:{server.log_path.parent / 'script.json'} (default)",
        ]
        assert status.status.message.message_id.startswith(f"{task_id}:command:")

        refused = await ask(client, "alice", "/model gpt-9", task_id)
        assert answer(refused)[0].startswith("/model: name must be one of scripted:")
        assert as_dict(refused.metadata)[TASK_KEY]["model"] is None

        other = f"scripted:{server.log_path.parent / 'other.json'}"
        chosen = await ask(client, "alice", f"/model {other}", task_id)
        assert answer(chosen) == (f"Model set to {other}.", {"command": "model"})
        assert chosen.status.state == pb.TASK_STATE_INPUT_REQUIRED
        effort = await ask(client, "alice", "/effort high", task_id)
        assert answer(effort) == ("Effort set to high.", {"command": "effort"})

        watched = await ask(client, "bob", "/effort low", task_id)
        assert answer(watched)[0] == (
            "refused: a watcher may only run commands that read the task, "
            "not /effort with an argument"
        )
        helped = await ask(client, "bob", "/help", task_id)
        assert "/sub-task" not in answer(helped)[0]
        assert "/status — Show this task's status" in answer(helped)[0]

        spawned = await ask(client, "alice", "/sub-task book the venue", task_id)
        said, metadata = answer(spawned)
        child_id = metadata["task_ref"]
        assert metadata == {"command": "sub-task", "task_ref": child_id}
        assert said.endswith(f"Created sub-task {child_id}.")
        child = await client.get_task(pb.GetTaskRequest(id=child_id), context=as_("alice"))
        assert child.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert as_dict(child.metadata)[TASK_KEY]["parent_tasks"][0]["task_id"] == task_id

        # The changes are in the task; the model runs on its new model, never seeing commands.
        unknown = await ask(client, "alice", "/x what now", task_id)
        assert answer(unknown)[0] == "other model"
        task = await client.get_task(pb.GetTaskRequest(id=task_id), context=as_("alice"))
        extension = as_dict(task.metadata)[TASK_KEY]
        assert (extension["model"], extension["reasoning_effort"]) == (other, "high")
        assert [ref["task_id"] for ref in extension["sub_tasks"]] == [child_id]
        # Each command is its message and its answer in the history; nothing else moved.
        assert len(task.history) == parked + 2 * 7 + 2  # seven commands, one turn


@pytest.mark.parametrize("binding", ["JSONRPC", "GRPC"])
async def test_a_change_is_an_event_followers_see_after_the_answer(
    server: HarnessServer, binding: str
) -> None:
    async with await client_for(server, binding, streaming=True) as client:
        [*_, parked] = [e async for e in client.send_message(request(text("hi")),
                                                             context=as_("alice"))]  # fmt: skip
        task_id = parked.status_update.task_id
        following = client.subscribe(pb.SubscribeToTaskRequest(id=task_id), context=as_("alice"))
        first = await anext(following)
        assert first.HasField("task")
        streamed = [e async for e in client.send_message(request(text("/effort medium"),
                                                                 task_id=task_id),
                                                         context=as_("alice"))]  # fmt: skip
        kinds = [e.WhichOneof("payload") for e in streamed]
        assert kinds == ["task", "status_update"]  # the sender's stream ends with the answer
        assert streamed[1].status_update.status.state == pb.TASK_STATE_INPUT_REQUIRED
        # The task's log is replayed after the Task (the conversation so far: its first
        # turn's answer), then the command's answer and the snapshot follow, live.
        replayed = []
        reply = await anext(following)
        while [p.text for p in reply.status_update.status.message.parts] != [
            "Effort set to medium."
        ]:
            replayed.append(reply)
            reply = await anext(following)
        snapshot = await anext(following)
        answers = [e.status_update.status.message.parts[0].text for e in replayed
                   if e.status_update.status.message.parts]  # fmt: skip
        assert answers == [parked.status_update.status.message.parts[0].text]
        assert replayed[0].HasField("task")  # (the task as it was made, its log's first event)
        await following.aclose()
        assert reply.status_update.status.message.parts[0].text == "Effort set to medium."
        assert as_dict(snapshot.task.metadata)[TASK_KEY]["reasoning_effort"] == "medium"


async def test_the_card_lists_the_commands_and_the_example_plugin_runs(
    server: HarnessServer,
) -> None:
    card = httpx.get(f"{server.url}/.well-known/agent-card.json", timeout=10).json()
    [commands] = [e for e in card["capabilities"]["extensions"] if e["uri"] == COMMANDS_URI]
    assert commands.get("required", False) is False  # (ProtoJSON leaves false out)
    assert [(c["name"], c["argument_hint"]) for c in commands["params"]["commands"]] == [
        ("model", "[<model>]"),
        ("effort", "[low|medium|high]"),
        ("sub-task", "<description>"),
        ("retry", ""),
        ("status", ""),
        ("help", ""),
        ("shout", "<text>"),
    ]
    async with await client_for(server, "JSONRPC", streaming=False) as client:
        [opened] = [e async for e in client.send_message(request(text("hello")),
                                                         context=as_("alice"))]  # fmt: skip
        task_id = opened.task.id
        # (refused before it is stored: the official client gets the error, typed)
        with pytest.raises(UnsupportedOperationError, match="message not accepted: please do not"):
            await ask(client, "alice", "PLEASE LISTEN", task_id)
        shouted = await ask(client, "alice", "/shout listen", task_id)
        assert answer(shouted) == ("LISTEN!", {"command": "shout"})
