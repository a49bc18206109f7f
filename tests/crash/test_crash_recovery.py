"""SIGKILL accord mid-load and check nothing acknowledged was lost.

Each run starts ``accord serve`` on a SQLite file, drives concurrent blocking and streaming
SendMessage calls, kills the process with SIGKILL at a random moment, restarts it (recovery
runs), then reads the store directly and checks: every task a client was told about exists;
every event a client received is in the log, at the same sequence number, unchanged; every log
is gap-free from 1; every snapshot equals the fold of its log; and no task was left running.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.processes import free_port, wait_serving

from accord.core._events import fold
from accord.store._sqlite import SqliteStore
from accord.wire._codec import decode, encode
from accord.wire._model import StreamResponse, TaskState

pytestmark = pytest.mark.processes

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
SLOW_AGENT = "crash_agents:steps"


def start_server(db: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")])
    process = subprocess.Popen(
        [
            sys.executable, "-m", "accord", "serve",
            "--port", str(port),
            "--store", f"sqlite:///{db}",
            "--agent", SLOW_AGENT,
            "--log-level", "warning",
        ],
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        env=env,
    )  # fmt: skip
    try:
        wait_serving(f"http://127.0.0.1:{port}", process, log.read_text, 30)
    except RuntimeError:
        process.kill()
        raise
    return process


@pytest.fixture
def server_log(tmp_path: Path) -> Iterator[Path]:
    log = tmp_path / "serve.log"
    yield log


def message(n: int) -> dict[str, object]:
    return {
        "message": {
            "messageId": f"m-{n}",
            "role": "ROLE_USER",
            "parts": [{"text": f"work {n}"}],
        }
    }


class Acknowledged:
    """What clients were told: task ids, and per task the events (seq -> JSON) received."""

    def __init__(self) -> None:
        self.tasks: set[str] = set()
        self.events: dict[str, dict[int, dict[str, object]]] = {}

    def event(self, task_id: str, seq: int, body: dict[str, object]) -> None:
        self.tasks.add(task_id)
        self.events.setdefault(task_id, {})[seq] = body


async def blocking_client(base: str, n: int, ack: Acknowledged) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        for i in range(n):
            try:
                response = await client.post(
                    f"{base}/message:send", json=message(i), headers=HEADERS
                )
            except httpx.HTTPError:
                return  # the server died
            if response.status_code == 200:
                task = response.json()["task"]
                ack.tasks.add(task["id"])


async def streaming_client(base: str, n: int, ack: Acknowledged) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        for i in range(n):
            try:
                async with client.stream(
                    "POST", f"{base}/message:stream", json=message(1000 + i), headers=HEADERS
                ) as response:
                    seq = None
                    task_id = None
                    async for line in response.aiter_lines():
                        if line.startswith("id: "):
                            seq = int(line[4:])
                        elif line.startswith("data: "):
                            body = json.loads(line[6:])
                            decode(line[6:].encode(), StreamResponse)  # valid on the wire
                            task_id = task_id or _task_id(body)
                            if seq is not None and task_id:
                                ack.event(task_id, seq, body)
            except (httpx.HTTPError, json.JSONDecodeError):
                return


def _task_id(body: dict[str, object]) -> str | None:
    for key in ("task", "statusUpdate", "artifactUpdate"):
        value = body.get(key)
        if isinstance(value, dict):
            found = value.get("id") if key == "task" else value.get("taskId")
            return str(found) if found else None
    return None


async def drive_and_kill(
    base: str, process: subprocess.Popen[bytes], kill_after: float
) -> Acknowledged:
    ack = Acknowledged()
    clients = [
        *(asyncio.ensure_future(blocking_client(base, 200, ack)) for _ in range(4)),
        *(asyncio.ensure_future(streaming_client(base, 200, ack)) for _ in range(4)),
    ]
    # Start the clock at the first acknowledgement, so a slow start on a busy machine
    # cannot leave the run with nothing to check.
    deadline = time.monotonic() + 30
    while not (ack.tasks and ack.events) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    await asyncio.sleep(kill_after)
    process.send_signal(signal.SIGKILL)
    process.wait()
    await asyncio.wait_for(asyncio.gather(*clients, return_exceptions=True), 30)
    return ack


def _stream_json(event_body: object) -> dict[str, object]:
    return json.loads(encode(event_body))  # type: ignore[no-any-return]


async def check_store(db: Path, ack: Acknowledged) -> int:
    store = SqliteStore(str(db))
    await store.open()
    try:
        for task_id in ack.tasks:
            record = await store.get_task(task_id, None)
            assert record is not None, f"acknowledged task {task_id} is missing"
        running = await store.tasks_in_states(frozenset({TaskState.SUBMITTED, TaskState.WORKING}))
        assert running == [], "recovery left tasks running"
        checked = 0
        after = ""
        states = frozenset(TaskState) - {TaskState.UNSPECIFIED}
        while batch := await store.tasks_in_states(states, 500, after):
            for record in batch:
                log = await store.read_events(record.id, 0, 100_000)
                assert [e.seq for e in log] == list(range(1, len(log) + 1)), record.id
                assert log[-1].seq == record.seq
                assert fold(log) == record.task, f"snapshot of {record.id} is not its fold"
                received = ack.events.get(record.id, {})
                by_seq = {e.seq: e for e in log}
                for seq, body in received.items():
                    assert seq in by_seq, f"event {seq} of {record.id} was acknowledged, then lost"
                    stored = _stream_json(by_seq[seq].stream_response())
                    if "task" in body:
                        continue  # the first stream item is the task as the turn began
                    assert stored == body, f"event {seq} of {record.id} changed"
                checked += 1
            after = batch[-1].id
        return checked
    finally:
        await store.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigkill_loses_nothing_acknowledged(tmp_path: Path, server_log: Path, seed: int) -> None:
    rng = random.Random(seed)
    db = tmp_path / "accord.db"
    port = free_port()
    process = start_server(db, port, server_log)
    kill_after = rng.uniform(0.05, 1.0)
    try:
        ack = asyncio.run(drive_and_kill(f"http://127.0.0.1:{port}", process, kill_after))
    finally:
        if process.poll() is None:
            process.kill()
    assert ack.tasks, "no task was acknowledged before the kill; the test proved nothing"
    # Recovery runs at start-up, before the card is served: start_server waited for it.
    restarted = start_server(db, port, server_log)
    restarted.send_signal(signal.SIGTERM)
    restarted.wait(15)
    checked = asyncio.run(check_store(db, ack))
    received = sum(len(events) for events in ack.events.values())
    print(
        f"kill after {kill_after:.2f}s: {len(ack.tasks)} tasks and {received} streamed events "
        f"acknowledged, {checked} logs checked"
    )
    assert checked >= len(ack.tasks)
    assert received > 0, "no streamed event was acknowledged before the kill"
