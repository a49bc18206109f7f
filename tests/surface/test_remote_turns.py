"""A remote worker's turn: the blocking SendMessage waits for the worker's move, a claim ends
with the turn, and a client's next message offers the task again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from surface_helpers import KEYS, Surface, message, surface
from tests.waiting import until

from accord.service._feed import FeedHub
from accord.surface._feed import follow

AGENT = {"X-API-Key": KEYS["agent"]}


async def first_task(s: Surface) -> str:
    """The id of the first task the agent's view lists ('' while there is none)."""
    _, rows = await s.get("/tasks/views/allTasks", "agent")
    return str(rows["rows"][0]["id"]) if rows["rows"] else ""


async def in_state(s: Surface, task_id: str, state: str) -> dict[str, Any] | None:
    """The answer to tasks:get once the task is in ``state``."""
    _, body = await s.post("/tasks/commands/tasks:get", {"id": task_id})
    return body if body["response"]["task"]["status"]["state"] == state else None


async def test_input_required_then_continued_through_a_remote_worker() -> None:
    async with surface(claim_lease_s=30.0) as s:
        blocking = asyncio.ensure_future(
            s.post("/tasks/commands/message:send", {"message": message("first")})
        )
        task_id = await until(lambda: first_task(s), "the task")  # SUBMITTED: the client waits
        assert task_id and not blocking.done()

        async def claim(worker: str) -> tuple[int, Any]:
            response = await s.http.post(
                "/tasks/claims", json={"taskId": task_id, "worker": worker}, headers=AGENT
            )
            return response.status_code, response.json()

        assert (await claim("w1"))[1]["outcome"] == "claimed"
        assert (await claim("w2"))[0] == 409  # one worker per task
        assert (await claim("w1"))[1]["outcome"] == "renewed"
        assert await s.move(task_id, "work") == 202
        assert not blocking.done()
        assert await s.move(task_id, "require_input") == 202

        status, body = await asyncio.wait_for(blocking, 5)
        assert (status, body["outcome"]) == (200, "task-created")
        assert body["response"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"

        # The turn ended, so did the claim: the client's next message offers the task again.
        continued = asyncio.ensure_future(
            s.post("/tasks/commands/message:send", {"message": message("second", taskId=task_id)})
        )
        engine = s.app.service.engine
        frames = follow(engine, FeedHub(engine), "", (0, -1), heartbeat=0.05)
        names = []
        async with asyncio.timeout(5):
            async for frame in frames:
                if frame.startswith(b"id:"):
                    names.append(frame.split(b"\n")[1].removeprefix(b"event: ").decode())
                    if names[-1] == "accord.tasks.TaskMessageAdded":
                        break
        await frames.aclose()  # type: ignore[attr-defined]
        assert names == [
            "a2a.tasks.TaskCreated",
            "a2a.tasks.TaskStatusUpdated",
            "a2a.tasks.TaskStatusUpdated",
            "accord.tasks.TaskMessageAdded",
        ]
        assert (await claim("w2"))[1]["outcome"] == "claimed"
        assert await s.move(task_id, "work") == 202
        assert await s.move(task_id, "complete") == 202
        status, body = await asyncio.wait_for(continued, 5)
        assert (status, body["outcome"]) == (200, "continued")
        assert body["response"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert (await claim("w1"))[0] == 409  # terminal: nothing to claim


async def test_an_expired_claim_fails_the_task() -> None:
    async with surface(claim_lease_s=0.1) as s:
        task_id = await s.create()
        response = await s.http.post("/tasks/claims", json={"taskId": task_id}, headers=AGENT)
        assert response.json()["outcome"] == "claimed"
        assert await s.move(task_id, "work") == 202
        body = await until(lambda: in_state(s, task_id, "TASK_STATE_FAILED"), "the task to fail")
        status_message = body["response"]["task"]["status"]["message"]["parts"][0]["text"]
        assert "claim expired" in status_message
        assert await s.move(task_id, "complete") == 409  # the late worker changes nothing


async def test_after_a_restart_a_working_task_nobody_claims_again_fails(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'accord.db'}"
    async with surface(store=store) as s:
        task_id = await s.create()
        response = await s.http.post("/tasks/claims", json={"taskId": task_id}, headers=AGENT)
        assert response.json()["outcome"] == "claimed"
        assert await s.move(task_id, "work") == 202
        waiting = await s.create()  # never claimed: stays SUBMITTED across the restart
    async with surface(store=store, claim_lease_s=0.1) as s:
        body = await until(lambda: in_state(s, task_id, "TASK_STATE_FAILED"), "the task to fail")
        assert body["response"]["task"]["status"]["state"] == "TASK_STATE_FAILED"
        _, body = await s.post("/tasks/commands/tasks:get", {"id": waiting})
        assert body["response"]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
        response = await s.http.post("/tasks/claims", json={"taskId": waiting}, headers=AGENT)
        assert response.json()["outcome"] == "claimed"


async def test_after_a_restart_the_worker_takes_its_task_back(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'accord.db'}"
    async with surface(store=store) as s:
        task_id = await s.create()
        await s.http.post("/tasks/claims", json={"taskId": task_id, "worker": "a"}, headers=AGENT)
        assert await s.move(task_id, "work") == 202
    async with surface(store=store, claim_lease_s=30) as s:
        response = await s.http.post(
            "/tasks/claims", json={"taskId": task_id, "worker": "b"}, headers=AGENT
        )
        assert response.json()["outcome"] == "claimed"  # the adopted claim had no holder
        assert await s.move(task_id, "complete") == 202


async def test_a_client_stream_follows_a_remote_worker() -> None:
    async with surface() as s:
        headers = {"X-API-Key": KEYS["client"], "A2A-Version": "1.0"}
        stream = asyncio.ensure_future(
            s.http.post("/message:stream", json={"message": message("hi")}, headers=headers)
        )
        task_id = await until(lambda: first_task(s), "the task")
        assert await s.move(task_id, "work") == 202
        status, _ = await s.post(
            "/tasks/commands/tasks:update_artifact",
            {
                "id": task_id,
                "artifact": {"artifactId": "a", "parts": [{"text": "out"}]},
                "append": False,
                "last_chunk": True,
            },
            "agent",
        )
        assert status == 202
        assert await s.move(task_id, "complete") == 202
        response = await asyncio.wait_for(stream, 5)
        kinds = [
            next(iter(json.loads(line[5:])))
            for line in response.text.splitlines()
            if line.startswith("data:")
        ]
        assert kinds == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
        assert '"TASK_STATE_COMPLETED"' in response.text
