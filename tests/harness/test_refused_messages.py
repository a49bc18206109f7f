"""A message a ``message.received`` hook refuses is refused before anything of it is stored:
the example plugin's data-loss rule (examples/house_rules.py, ``no_card_numbers``) on a real
``accord serve``. The sender gets the refusal; the card number is in nothing a client can
read afterwards — GetTask with the whole history, ListTasks, a stream that followed the task
all along, a stream replayed from its start, the push notifications, the dashboard's task
list and its timeline — whether it came as a new task or to a parked conversation."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.harness.harness_proc import HarnessServer, start, write_settings
from tests.push.receiver import Receiver

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "examples/harness/plugins/house-rules"
CARD = "4111 1111 1111 1111"
REFUSAL = "message not accepted: no card numbers, please"
HEADERS = {"A2A-Version": "1.0"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[HarnessServer]:
    config = write_settings(tmp_path, f'plugins = ["{PLUGIN}"]\n')
    # (top-level settings first: the harness table is written after them)
    config.write_text('push_allow_hosts = ["127.0.0.1"]\n' + config.read_text())
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), path]))  # examples.*
    try:
        started = start(tmp_path, f"sqlite:///{tmp_path / 'tasks.db'}", config, grpc=False)
    finally:
        if path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = path
    try:
        yield started
    finally:
        started.stop()


def as_(who: str) -> dict[str, str]:
    return {**HEADERS, "X-Participant-Id": who}


def message(text: str, task_id: str = "", **more: Any) -> dict[str, Any]:
    found = {"messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [{"text": text}]}
    return {**found, **({"taskId": task_id} if task_id else {}), **more}


async def events(
    http: httpx.AsyncClient, path: str, who: str, **headers: str
) -> AsyncIterator[dict[str, Any]]:
    """The SSE events of ``path`` (``POST`` for A2A, ``GET`` under /ui), as {event, id, data}."""
    method = "GET" if path.startswith("/ui/") else "POST"
    async with http.stream(method, path, headers={**as_(who), **headers}) as response:
        assert response.status_code == 200, await response.aread()
        current: dict[str, Any] = {}
        async for line in response.aiter_lines():
            if not line:
                if "data" in current:
                    yield current
                current = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(": ")
                current[name] = json.loads(value) if name == "data" else value


async def until_completed(stream: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every event of ``stream`` up to the one that shows the task COMPLETED."""
    seen = []
    async for event in stream:
        seen.append(event)
        if "TASK_STATE_COMPLETED" in json.dumps(event["data"]):
            return seen
    return seen


async def whole_timeline(stream: AsyncIterator[dict[str, Any]]) -> list[dict[str, Any]]:
    """The dashboard's timeline replayed from the start: its snapshot, then every event of
    the task's log up to the snapshot's."""
    seen = []
    last = None
    async for event in stream:
        seen.append(event)
        if event.get("event") == "snapshot":
            last = str(event["data"]["seq"])
        elif event.get("id") == last:
            return seen
    return seen


async def test_a_refused_message_is_in_nothing_a_client_reads(server: HarnessServer) -> None:
    async with (
        Receiver() as webhook,
        httpx.AsyncClient(base_url=server.url, timeout=30) as http,
    ):

        async def send(text: str, task_id: str = "", who: str = "alice") -> httpx.Response:
            body = {"message": message(text, task_id)}
            return await http.post("/message:send", json=body, headers=as_(who))

        # A new task whose first message carries a card number: refused, no task made.
        refused = await send(f"pay with {CARD}")
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == REFUSAL
        listed = (await http.get("/tasks", headers=as_("alice"))).json()
        assert listed.get("tasks", []) == []

        # A conversation, followed by a push config and by a stream from now on.
        task = (await send("hello")).json()["task"]
        task_id = task["id"]
        config = {"id": "hook", "url": webhook.url()}
        pushed = await http.post(
            f"/tasks/{task_id}/pushNotificationConfigs", json=config, headers=as_("alice")
        )
        assert pushed.status_code == 200, pushed.text
        follower = asyncio.ensure_future(
            until_completed(events(http, f"/tasks/{task_id}:subscribe", "alice"))
        )

        # The card number to the parked conversation, blocking and streaming: refused.
        refused = await send(f"my card is {CARD}", task_id)
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == REFUSAL
        body = {"message": message(f"again: {CARD}", task_id)}
        streamed = await http.post("/message:stream", json=body, headers=as_("alice"))
        assert streamed.status_code == 400
        assert streamed.json()["error"]["message"] == REFUSAL
        # The conversation goes on; then it completes (its streams end).
        answered = (await send("fine", task_id)).json()["task"]
        assert answered["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        control = {"kind": "control", "action": "complete"}
        done = message("", task_id)
        done["parts"] = [{"data": control, "mediaType": "application/vnd.tiny-harness.event+json"}]
        completed = await http.post("/message:send", json={"message": done}, headers=as_("alice"))
        assert completed.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"

        # What every reader gets: the whole history, the list, both streams, the push, the
        # dashboard's rows and its timeline from the first event.
        whole = await http.get(f"/tasks/{task_id}?historyLength=1000", headers=as_("alice"))
        texts = [p.get("text") for m in whole.json()["history"] for p in m["parts"]]
        assert "hello" in texts and "fine" in texts  # (the reads see the conversation)
        live = await asyncio.wait_for(follower, 30)
        replayed = await until_completed(
            events(http, f"/tasks/{task_id}:subscribe", "alice", **{"Last-Event-ID": "0"})
        )
        await webhook.wait_for(
            lambda r: any("TASK_STATE_COMPLETED" in q.body.decode() for q in r.accepted)
        )
        notifications = [r.body.decode() for r in webhook.received]
        rows = await http.get("/ui/api/tasks", headers=as_("alice"))
        assert [row["id"] for row in rows.json()["rows"]] == [task_id]
        timeline = await whole_timeline(
            events(http, f"/ui/api/tasks/{task_id}/events", "alice", **{"Last-Event-ID": "0"})
        )
        read = {
            "GetTask": whole.text,
            "ListTasks": (await http.get("/tasks?historyLength=1000", headers=as_("alice"))).text,
            "a stream that followed the task": json.dumps(live),
            "a stream replayed from the start": json.dumps(replayed),
            "push notifications": json.dumps(notifications),
            "the dashboard's rows": rows.text,
            "the dashboard's timeline": json.dumps(timeline),
        }
        for where, text in read.items():
            assert "4111" not in text, f"the refused card number is in {where}"
        assert len(live) > 3 and len(replayed) > 3 and len(timeline) > 3 and notifications
        with contextlib.suppress(asyncio.CancelledError):
            follower.cancel()
