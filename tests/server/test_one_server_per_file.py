"""One ``accord serve`` per SQLite file. A second server on the file of a running one stops at
once with one line naming the holder, and the first server's running task is untouched (its
start-up recovery would have failed it); once the holder is killed (SIGKILL: no clean-up) a
new server starts on the file. ``accord admin`` reads the file beside a running server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest
from tests.interop.accord_server_proc import (
    ACCORD,
    AccordServer,
    accord_serve,
    serve_command,
    serve_env,
)
from tests.interop.sse_events import events, payload
from tests.processes import free_port

pytestmark = pytest.mark.processes

HEADERS = {"A2A-Version": "1.0"}


def start_slow_task(server: AccordServer) -> str:
    """A task the agent works on until it is canceled; its id, once it is WORKING."""
    body = {"message": {"messageId": "m-slow", "role": "ROLE_USER", "parts": [{"text": "slow"}]}}
    with (
        httpx.Client(headers={**HEADERS, "Accept": "text/event-stream"}, timeout=30) as http,
        http.stream("POST", f"{server.url}/message:stream", json=body) as response,
    ):
        for event in events(response):
            item = payload(event)
            if "task" in item:
                task_id = str(item["task"]["id"])
            elif item["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING":
                return task_id  # leaving the stream leaves the task running
    raise AssertionError("the stream ended before the task was WORKING")


def state_of(server: AccordServer, task_id: str) -> str:
    task = httpx.get(f"{server.url}/tasks/{task_id}", headers=HEADERS).json()
    return str(task["status"]["state"])


def test_a_second_server_is_refused_and_the_first_keeps_its_running_task(
    tmp_path: Path,
) -> None:
    with accord_serve(tmp_path) as first:
        task_id = start_slow_task(first)
        second = subprocess.run(
            serve_command(tmp_path, free_port()),
            env=serve_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert second.returncode == 3
        assert second.stdout == ""
        assert second.stderr == (
            f"accord: {tmp_path / 'tasks.db'} is in use by accord serve "
            f"(pid {first.process.pid}); use another --store, or PostgreSQL for several nodes\n"
        )
        assert state_of(first, task_id) == "TASK_STATE_WORKING"
        canceled = httpx.post(f"{first.url}/tasks/{task_id}:cancel", headers=HEADERS, json={})
        assert canceled.json()["status"]["state"] == "TASK_STATE_CANCELED"


def test_a_new_server_starts_once_the_holder_is_killed(tmp_path: Path) -> None:
    with accord_serve(tmp_path) as first:
        task_id = start_slow_task(first)
        first.process.kill()
        first.process.wait()
    with accord_serve(tmp_path) as second:
        # Its recovery fails the task the killed server left running, as documented.
        assert state_of(second, task_id) == "TASK_STATE_FAILED"


def test_accord_admin_reads_beside_a_running_server(tmp_path: Path) -> None:
    with accord_serve(tmp_path) as server:
        start_slow_task(server)
        store = f"sqlite:///{tmp_path / 'tasks.db'}"
        for state in ("failing", "active", "done"):
            listed = subprocess.run(
                [str(ACCORD), "admin", "push-deliveries", "--store", store, "--state", state],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert listed.returncode == 0, listed.stderr
            assert listed.stdout == f"no {state} push deliveries\n"
        as_json = subprocess.run(
            [str(ACCORD), "admin", "push-deliveries", "--store", store, "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert json.loads(as_json.stdout) == []
        assert server.process.poll() is None
