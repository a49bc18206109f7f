"""Visible work through the official a2a-sdk client on JSON-RPC, HTTP+JSON and gRPC: a turn
whose model calls two tools streams a step event for the model call and one for each tool
call (``application/vnd.accord.step+json`` data parts on WORKING status updates), in order,
and GetTask's history holds the same events; the client reads the rest of the stream as
before (the turn parks with its answer)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a2a.client import ClientCallContext
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format
from tests.harness.harness_proc import HarnessServer, start, write_settings
from tests.harness.test_harness_sdk import client_for

pytestmark = pytest.mark.processes

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]
STEP_MEDIA_TYPE = "application/vnd.accord.step+json"
PLAN = {"steps": [{"name": "book"}, {"name": "tell", "depends_on": ["book"]}]}
# Each task's first turn: a model call with two tool calls (one fails), then the answer.
SCRIPT: list[dict[str, Any]] = [
    {
        "text": "",
        "tool_calls": [
            {"name": "create_plan", "arguments": PLAN},
            {"name": "complete_step", "arguments": {"step": "tell", "output": "x"}},
        ],
    },
    {"text": "planned"},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HarnessServer]:
    workdir: Path = tmp_path_factory.mktemp("steps")
    config = write_settings(workdir, script=SCRIPT)
    started = start(workdir, f"sqlite:///{workdir / 'tasks.db'}", config)
    try:
        yield started
    finally:
        started.stop()


ALICE = ClientCallContext(service_parameters={"X-Participant-Id": "alice"})


def steps_in(message: pb.Message) -> list[dict[str, Any]]:
    return [
        json_format.MessageToDict(part.data)
        for part in message.parts
        if part.media_type == STEP_MEDIA_TYPE
    ]


def summary(step: dict[str, Any]) -> tuple[str, str]:
    if step["kind"] == "model_call":
        return ("model_call", ",".join(call["name"] for call in step["tool_calls"]))
    return ("tool_call", f"{step['name']}:{'error' if step['error'] else 'ok'}")


EXPECTED = [
    ("model_call", "create_plan,complete_step"),
    ("tool_call", "create_plan:ok"),
    ("tool_call", "complete_step:error"),
]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_official_client_sees_each_tool_call_live_and_in_the_history(
    server: HarnessServer, binding: str
) -> None:
    request = pb.SendMessageRequest(
        message=pb.Message(
            role=pb.ROLE_USER, message_id=uuid.uuid4().hex, parts=[pb.Part(text="plan it")]
        )
    )
    async with await client_for(server, binding, streaming=True) as client:
        events = [e async for e in client.send_message(request, context=ALICE)]
    updates = [e.status_update for e in events if e.HasField("status_update")]
    live = [s for u in updates for s in steps_in(u.status.message)]
    assert [summary(s) for s in live] == EXPECTED
    assert all(
        u.status.state == pb.TASK_STATE_WORKING for u in updates if steps_in(u.status.message)
    )
    created, failed = live[1], live[2]
    assert created["arguments"] == PLAN and created["result"] == "the plan is set"
    assert "depends on" in failed["result"] or failed["result"]
    assert updates[-1].status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert updates[-1].status.message.parts[0].text == "planned"
    task_id = events[0].task.id
    async with await client_for(server, binding, streaming=False) as client:
        task = await client.get_task(pb.GetTaskRequest(id=task_id), context=ALICE)
    stored = [s for m in task.history for s in steps_in(m)]
    assert stored == live
    texts = [p.text for m in task.history for p in m.parts if p.text]
    assert texts == ["plan it", "planned"]
