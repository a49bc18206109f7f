"""Remote agents end to end: two ``examples/remote_worker.py`` processes serve
``accord serve --agent remote``; the official a2a-sdk client sends the messages."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest, Task, TaskState
from procs import CLIENT_KEY, WORKER_KEY, WorkerProcess, remote_server, start_worker
from tests.waiting import until

pytestmark = pytest.mark.processes

MESSAGES = 200


def request(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])
    )


async def sdk_send(url: str, texts: list[str], concurrency: int = 25) -> list[Task]:
    """Blocking SendMessage of every text through the a2a-sdk client (JSON-RPC)."""
    http = httpx.AsyncClient(headers={"X-API-Key": CLIENT_KEY}, timeout=60)
    config = ClientConfig(
        streaming=False, httpx_client=http, supported_protocol_bindings=["JSONRPC"]
    )
    client = await create_client(url, client_config=config)
    gate = asyncio.Semaphore(concurrency)

    async def one(text: str) -> Task:
        async with gate:
            [response] = [r async for r in client.send_message(request(text))]
            return response.task

    try:
        return list(await asyncio.gather(*(one(t) for t in texts)))
    finally:
        await client.close()
        await http.aclose()


@pytest.fixture
def workers() -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.stop()


async def test_two_workers_complete_every_task_exactly_once(
    tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    with remote_server(tmp_path) as url:
        workers += [start_worker(url, "w1"), start_worker(url, "w2")]
        for worker in workers:
            worker.wait_for("connected")
        texts = [f"message {n}" for n in range(MESSAGES)]
        tasks = await sdk_send(url, texts)

        assert [t.status.state for t in tasks] == [TaskState.TASK_STATE_COMPLETED] * MESSAGES
        assert [t.artifacts[0].parts[0].text for t in tasks] == texts
        ids = {t.id for t in tasks}
        assert len(ids) == MESSAGES
        await until(
            lambda: sum("completed" in line for w in workers for line in w.drain()) >= MESSAGES,
            'the last "completed" lines',
        )
        completed = [
            line["completed"]
            for worker in workers
            for line in worker.drain()
            if "completed" in line
        ]
        assert sorted(completed) == sorted(ids)  # each task completed once, by one worker
        lost = [line for worker in workers for line in worker.drain() if "lost" in line]
        assert lost == []
        async with httpx.AsyncClient(base_url=url, headers={"X-API-Key": WORKER_KEY}) as http:
            rows = (await http.get("/tasks/views/allTasks")).json()["rows"]
        assert {r["id"] for r in rows} == ids and {r["state"] for r in rows} == {"Completed"}


async def test_a_killed_worker_loses_its_claim_and_the_task_fails(
    tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    with remote_server(tmp_path, lease_s=1.0) as url:
        slow = start_worker(url, "slow", work_seconds=600)
        workers.append(slow)
        slow.wait_for("connected")
        sending = asyncio.ensure_future(sdk_send(url, ["never finished"]))
        claimed = await asyncio.to_thread(slow.wait_for, "claimed")
        slow.process.kill()  # mid-task: it worked on it and renewed its claim until now
        slow.process.wait()

        [task] = await asyncio.wait_for(sending, 30)
        assert task.id == claimed["claimed"]
        assert task.status.state == TaskState.TASK_STATE_FAILED
        assert "claim expired" in task.status.message.parts[0].text

        # The service goes on: a new worker takes the next task.
        fresh = start_worker(url, "fresh")
        workers.append(fresh)
        fresh.wait_for("connected")
        [done] = await sdk_send(url, ["after the crash"])
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
