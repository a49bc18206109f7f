"""The documented command serves an example agent:
``PYTHONPATH=. accord serve --agent examples.multi_turn:agent`` from the repository root.

The multi-turn example parks its task in INPUT_REQUIRED until it gets a number. Each message
that continues the task is a new turn, and its stream (raw JSON-RPC, raw HTTP+JSON, the
``accord`` command) follows that turn to its own end."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from accord_server_proc import AccordServer, accord_serve
from sse_events import events, payload

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
ACCORD = str(Path(sys.executable).with_name("accord"))
HEADERS = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def multi_turn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AccordServer]:
    workdir = tmp_path_factory.mktemp("multi-turn")
    with accord_serve(workdir, "examples.multi_turn:agent", cwd=ROOT, python_path=(".",)) as server:
        yield server


def message(text: str, **ids: str) -> dict[str, Any]:
    return {
        "message": {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            **ids,
        }
    }


def send(server: AccordServer, text: str, **ids: str) -> dict[str, Any]:
    response = httpx.post(f"{server.url}/message:send", json=message(text, **ids), headers=HEADERS)
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()["task"]
    return task


def stream(server: AccordServer, binding: str, text: str, task_id: str) -> list[str]:
    """The stream of one message continuing ``task_id``, each event as ``kind:detail``."""
    body = message(text, taskId=task_id)
    if binding == "JSONRPC":
        url = server.url
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": body}
    else:
        url = f"{server.url}/message:stream"
    shown: list[str] = []
    with (
        httpx.Client(headers={**HEADERS, "Accept": "text/event-stream"}, timeout=30) as http,
        http.stream("POST", url, json=body) as response,
    ):
        assert response.status_code == 200
        for event in events(response):
            item = payload(event)
            if "task" in item:
                shown.append(f"task:{item['task']['status']['state']}")
            elif "statusUpdate" in item:
                shown.append(f"status:{item['statusUpdate']['status']['state']}")
            else:
                parts = item["artifactUpdate"]["artifact"]["parts"]
                shown.append("artifact:" + "".join(p["text"] for p in parts))
    return shown


def test_the_multi_turn_example_is_served(multi_turn: AccordServer) -> None:
    first = send(multi_turn, "book a table")
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    done = send(multi_turn, "2", taskId=str(first["id"]))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_the_stream_of_each_continuation_follows_its_turn(
    multi_turn: AccordServer, binding: str
) -> None:
    task_id = str(send(multi_turn, "book a table")["id"])
    assert stream(multi_turn, binding, "lots", task_id) == [
        "task:TASK_STATE_INPUT_REQUIRED",
        "status:TASK_STATE_WORKING",
        "status:TASK_STATE_INPUT_REQUIRED",
    ]
    assert stream(multi_turn, binding, "4", task_id) == [
        "task:TASK_STATE_INPUT_REQUIRED",
        "status:TASK_STATE_WORKING",
        "artifact:table for 4 booked",
        "status:TASK_STATE_COMPLETED",
    ]


def test_accord_stream_continues_a_task(multi_turn: AccordServer) -> None:
    """The README's conversation: ``accord send``, then ``accord stream --task-id``."""

    def accord(*args: str) -> subprocess.CompletedProcess[str]:
        command = [ACCORD, *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    asked = accord("send", multi_turn.url, "book a table", "--json")
    assert asked.returncode == 0, asked.stderr
    task_id = json.loads(asked.stdout)["task"]["id"]
    answered = accord("stream", multi_turn.url, "4", "--task-id", task_id)
    assert answered.returncode == 0, answered.stderr
    lines = answered.stdout.splitlines()
    assert lines[0].startswith(f"task {task_id}")
    assert lines[1:] == ["→ working", "  [booking] table for 4 booked", "→ completed"]
