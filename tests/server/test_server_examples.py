"""The example agents in examples/ behave as their docstrings say."""

from __future__ import annotations

import json
from typing import Any

import httpx
from examples import class_agent, function_agent, multi_turn, streaming
from server_helpers import Serve, message, rpc
from tests.waiting import until


async def send(http: httpx.AsyncClient, msg: dict[str, Any], **config: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"message": msg}
    if config:
        body["configuration"] = config
    response = await http.post("/message:send", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def texts(task: dict[str, Any], name: str) -> str:
    return "".join(
        p["text"] for a in task.get("artifacts", []) if a.get("name") == name for p in a["parts"]
    )


async def test_function_agent_counts_words(serve: Serve) -> None:
    async with serve(agent=function_agent.agent) as http:
        task = (await send(http, message("count these four words")))["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert texts(task, "count") == "4 words"
        reply = await send(http, message("hello"))
        assert "task" not in reply
        assert reply["message"]["parts"] == [{"text": "hello to you too"}]
        assert reply["message"]["role"] == "ROLE_AGENT"


async def test_class_agent_counts_down(serve: Serve) -> None:
    async with serve(agent=class_agent.Countdown(tick_s=0.001)) as http:
        task = (await send(http, message("countdown 2")))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["status"]["message"]["parts"] == [{"text": "liftoff"}]
    assert texts(task, "countdown") == "2\n1\n0\n"


async def test_class_agent_cancel_stops_the_countdown(serve: Serve) -> None:
    agent = class_agent.Countdown(tick_s=60)
    async with serve(agent=agent) as http:
        task = (await send(http, message("countdown 5"), returnImmediately=True))["task"]
        await until(lambda: task["id"] in agent.running, "the countdown to start", every_s=0.001)
        canceled = await http.post(f"/tasks/{task['id']}:cancel", json={})
        assert canceled.json()["status"]["state"] == "TASK_STATE_CANCELED"
        # execute's finally runs once it is cancelled
        await until(lambda: task["id"] not in agent.running, "the countdown to end", every_s=0.001)
        assert agent.canceled == [task["id"]]
        after = (await http.get(f"/tasks/{task['id']}")).json()
        assert after["status"]["state"] == "TASK_STATE_CANCELED"


async def test_multi_turn_agent_asks_until_it_has_an_answer(serve: Serve) -> None:
    async with serve(agent=multi_turn.agent) as http:
        task = (await send(http, message("book a table")))["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert task["status"]["message"]["parts"] == [{"text": "For how many people?"}]
        ids = {"taskId": task["id"], "contextId": task["contextId"]}
        again = (await send(http, message("lots", **ids)))["task"]
        assert again["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert "not a number" in again["status"]["message"]["parts"][0]["text"]
        done = (await send(http, message("4", taskId=task["id"])))["task"]
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        assert texts(done, "booking") == "table for 4 booked"
        history = [m["parts"][0]["text"] for m in done["history"] if m["role"] == "ROLE_USER"]
        assert history == ["book a table", "lots", "4"]


def sse_payloads(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]


async def test_streaming_agent_sends_chunks_that_assemble(serve: Serve) -> None:
    async with serve(agent=streaming.agent) as http:
        response = await http.post("/message:stream", json={"message": message("hello big world")})
        events = sse_payloads(response.text)
        assert "task" in events[0]
        updates = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
        shout = [u for u in updates if u["artifact"].get("name") == "shout"]
        assert [u["artifact"]["parts"][0]["text"] for u in shout] == ["HELLO ", "BIG ", "WORLD"]
        assert [u.get("append", False) for u in shout] == [False, True, True]
        assert [u.get("lastChunk", False) for u in shout] == [False, False, True]
        assert len({u["artifact"]["artifactId"] for u in shout}) == 1
        final = events[-1]["statusUpdate"]["status"]["state"]
        assert final == "TASK_STATE_COMPLETED"
        task_id = events[0]["task"]["id"]
        task = (await rpc(http, "GetTask", {"id": task_id}))["result"]
        assert texts(task, "shout") == "HELLO BIG WORLD"
        assert texts(task, "summary") == "3 words"
