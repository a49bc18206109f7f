"""``accord serve`` on SQLite whose disk fills while an agent works (a small tmpfs the test
fills and empties): the task is never left WORKING. Its run waits and finishes once there is
space (a client following it sees it complete); with ``store_outage_s`` passed, the run is
stopped and the task failed, with a clear status, as soon as the store takes writes again."""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.full_disk import small_disk
from tests.server.serve_process import Served, serving

# (they mount a small tmpfs with mount(8): a program)
pytestmark = pytest.mark.processes

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
# Starts working, waits until the test creates ./go, then reports and completes.
GATED_AGENT = """
import asyncio
from pathlib import Path


async def agent(ctx, task):
    await task.start_working()
    while not Path("go").exists():
        await asyncio.sleep(0.02)
    await task.update_artifact(text="report on " + ctx.text, artifact_id="r", last_chunk=True)
    await task.complete("done")
"""


def rpc(served: Served, method: str, params: dict[str, Any]) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer = httpx.post(served.url, json=body, headers=HEADERS, timeout=30).json()
    assert "result" in answer, answer
    return answer["result"]


def state(served: Served, task_id: str) -> str:
    return str(rpc(served, "GetTask", {"id": task_id})["status"]["state"])


def eventually(check: Any, what: str, patience: float = 15.0) -> None:
    deadline = time.monotonic() + patience
    while not check():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def follow(served: Served, task_id: str, states: list[str]) -> threading.Thread:
    """SubscribeToTask in a thread, noting each status update's state until the stream ends."""

    def run() -> None:
        body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
        with httpx.stream("POST", served.url, json=body, headers=HEADERS, timeout=60) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    update = json.loads(line[5:])["result"].get("statusUpdate")
                    if update is not None:
                        states.append(update["status"]["state"])

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def start_task(served: Served) -> str:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "q3"}]}
    params = {"message": message, "configuration": {"returnImmediately": True}}
    task_id = str(rpc(served, "SendMessage", params)["task"]["id"])
    eventually(lambda: state(served, task_id) == "TASK_STATE_WORKING", "the task to work")
    return task_id


def test_a_task_whose_disk_fills_mid_turn_completes_once_there_is_space(tmp_path: Path) -> None:
    (tmp_path / "gated.py").write_text(GATED_AGENT)
    with small_disk(tmp_path) as disk:
        store = f"sqlite:///{disk.path / 'accord.db'}"
        with serving("--agent", "gated:agent", "--store", store, cwd=tmp_path) as served:
            task_id = start_task(served)
            states: list[str] = []
            follower = follow(served, task_id, states)
            disk.fill()
            (tmp_path / "go").touch()
            eventually(lambda: "database or disk is full" in served.log(), "the append to fail")
            assert state(served, task_id) == "TASK_STATE_WORKING"
            disk.free()
            follower.join(15)
            assert not follower.is_alive(), "the follower still waits"
            assert states[-1] == "TASK_STATE_COMPLETED"
            task = rpc(served, "GetTask", {"id": task_id})
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"
            assert task["artifacts"][0]["parts"][0]["text"] == "report on q3"


def test_past_store_outage_s_the_task_is_failed_once_the_store_takes_writes(
    tmp_path: Path,
) -> None:
    (tmp_path / "gated.py").write_text(GATED_AGENT)
    (tmp_path / "accord.toml").write_text("store_outage_s = 0.5\n")
    with small_disk(tmp_path) as disk:
        store = f"sqlite:///{disk.path / 'accord.db'}"
        args = ("--agent", "gated:agent", "--store", store, "--config", "accord.toml")
        with serving(*args, cwd=tmp_path) as served:
            task_id = start_task(served)
            states: list[str] = []
            follower = follow(served, task_id, states)
            disk.fill()
            (tmp_path / "go").touch()
            eventually(lambda: "its run is stopped" in served.log(), "the run to be stopped")
            disk.free()
            follower.join(15)
            assert not follower.is_alive(), "the follower still waits"
            assert states[-1] == "TASK_STATE_FAILED"
            task = rpc(served, "GetTask", {"id": task_id})
            assert task["status"]["state"] == "TASK_STATE_FAILED"
            text = task["status"]["message"]["parts"][0]["text"]
            assert "could not store this task's progress" in text
