"""Limits over HTTP under concurrent requests: exactly the limit is created, every other
request gets RESOURCE_EXHAUSTED on its binding (JSON-RPC -32010, REST 429, an SSE error event
on a stream), as a request refused by the check before the store does."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from server_helpers import message, reason, rpc, serve_settings

LIMIT = 3
BURST = 12


def sse_payloads(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]


async def test_a_burst_of_sends_over_jsonrpc_creates_exactly_the_limit(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'a.db'}"
    async with serve_settings(store=store, tasks_per_tenant=LIMIT) as http:
        replies = await asyncio.gather(
            *(rpc(http, "SendMessage", {"message": message(f"m{n}")}) for n in range(BURST))
        )
        created = [r["result"]["task"] for r in replies if "result" in r]
        errors = [r["error"] for r in replies if "error" in r]
        assert len(created) == LIMIT and len(errors) == BURST - LIMIT
        for error in errors:
            assert error["code"] == -32010
            assert reason(error["data"]) == "RESOURCE_EXHAUSTED"
            assert error["message"] == f"the tenant already holds {LIMIT} tasks"
        listed = (await rpc(http, "ListTasks", {}))["result"]
        assert listed["totalSize"] == LIMIT
        assert {t["id"] for t in listed["tasks"]} == {t["id"] for t in created}
        # Full: a later request is refused by the check before the store, the same way.
        late = await rpc(http, "SendMessage", {"message": message("late")})
        assert late["error"]["code"] == -32010
        assert late["error"]["message"] == errors[0]["message"]


async def test_a_burst_of_rest_streams_creates_exactly_the_limit(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'a.db'}"
    async with serve_settings(store=store, tasks_per_tenant=LIMIT) as http:
        responses = await asyncio.gather(
            *(
                http.post("/message:stream", json={"message": message(f"m{n}")})
                for n in range(BURST)
            )
        )
        streams = [sse_payloads(r.text) for r in responses]
        tasks = [s for s in streams if "task" in s[0]]
        refused = [s for s in streams if "error" in s[0]]
        assert len(tasks) == LIMIT and len(refused) == BURST - LIMIT
        for stream in tasks:
            assert stream[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        for [payload] in refused:
            assert payload["error"]["code"] == 429
            assert payload["error"]["status"] == "RESOURCE_EXHAUSTED"
        listed = (await http.get("/tasks")).json()
        assert listed["totalSize"] == LIMIT


async def test_concurrent_push_configs_over_rest_stop_at_the_limit(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'a.db'}"
    async with serve_settings(
        store=store, push_configs_per_task=2, push_allow_hosts=["127.0.0.1"]
    ) as http:
        task = (await http.post("/message:send", json={"message": message()})).json()["task"]
        responses = await asyncio.gather(
            *(
                http.post(
                    f"/tasks/{task['id']}/pushNotificationConfigs",
                    json={"id": f"c{n}", "url": f"http://127.0.0.1:9/hook/{n}"},
                )
                for n in range(8)
            )
        )
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [200] * 2 + [429] * 6
        listed = (await http.get(f"/tasks/{task['id']}/pushNotificationConfigs")).json()
        assert len(listed["configs"]) == 2
