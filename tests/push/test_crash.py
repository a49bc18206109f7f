"""SIGKILL of ``accord serve`` while it delivers, then a restart on the same SQLite file: the
events not yet delivered arrive, in order, each at least once (once after dedupe)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import pytest

from .receiver import Received, Receiver
from .serve_agents import ARTIFACTS
from .server_proc import accord_serve

pytestmark = pytest.mark.processes


async def send_with_webhook(url: str, webhook: str) -> dict[str, object]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "go"}]},
            "configuration": {
                "taskPushNotificationConfig": {"id": "hook", "url": webhook, "token": "tok"}
            },
        },
    }
    async with httpx.AsyncClient(timeout=30) as client:
        answer = (await client.post(url, json=body, headers={"A2A-Version": "1.0"})).json()
    task: dict[str, object] = answer["result"]["task"]
    return task


async def test_sigkill_during_delivery_then_restart_delivers_the_rest(tmp_path: Path) -> None:
    stuck = asyncio.Event()  # the receiver is holding event 4
    never = asyncio.Event()

    async def hold_the_fourth(request: Received, index: int) -> int:
        if request.event_id.endswith(":4") and not stuck.is_set():
            stuck.set()
            await never.wait()  # the server dies waiting for this answer
        return 200

    total = ARTIFACTS + 3  # the task, working, the artifacts, completed
    async with Receiver(hold_the_fourth) as receiver:
        async with accord_serve(tmp_path, "serve_agents:many") as (url, process):
            task = await send_with_webhook(url, receiver.url())
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"  # type: ignore[index]
            await asyncio.wait_for(stuck.wait(), 20)
            process.send_signal(signal.SIGKILL)
            assert await process.wait() == -signal.SIGKILL
        assert len(receiver.accepted_ids()) == 3  # events 1-3; 4 was in flight

        async with accord_serve(tmp_path, "serve_agents:many"):
            await receiver.wait_for(lambda r: len(r.accepted_ids()) == total, timeout=30)

    task_id = task["id"]
    assert receiver.accepted_ids() == [f"{task_id}:{seq}" for seq in range(1, total + 1)]
    # At least once: only the event in flight at the kill may come twice, and nothing earlier.
    seen = [r.event_id for r in receiver.received]
    assert seen.count(f"{task_id}:4") == 2
    assert len(seen) == total + 1
    assert all(r.headers["x-a2a-notification-token"] == "tok" for r in receiver.received)
