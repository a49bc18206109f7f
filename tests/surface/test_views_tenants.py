"""The views with their query parameters, and tenant isolation on the surface, the feed and
the A2A bindings: a second tenant sees nothing of the first."""

from __future__ import annotations

import asyncio

import pytest
from surface_helpers import KEYS, message, surface

from accord.service._feed import FeedHub
from accord.surface import SurfaceApp
from accord.surface._feed import follow


async def test_tasks_view_filters_and_rows() -> None:
    async with surface() as s:
        first = await s.create("one")
        second = await s.create("two")
        await s.move(second, "work")
        await s.move(second, "complete")
        status, body = await s.get("/tasks/views/tasks")
        assert status == 200
        assert {row["id"]: row["state"] for row in body["rows"]} == {
            first: "Submitted",
            second: "Completed",
        }
        _, body = await s.get("/tasks/views/tasks", status="Completed")
        assert [row["id"] for row in body["rows"]] == [second]
        context = body["rows"][0]["contextId"]
        _, body = await s.get("/tasks/views/tasks", contextId=context)
        assert [row["id"] for row in body["rows"]] == [second]
        _, body = await s.get("/tasks/views/tasks", statusTimestampAfter="2999-01-01T00:00:00Z")
        assert body["rows"] == []
        status, body = await s.get("/tasks/views/tasks", status="Done")
        assert status == 422 and body["errors"][0]["field"] == "status"
        status, _ = await s.get("/tasks/views/tasks", statusTimestampAfter="yesterday")
        assert status == 422


async def test_agent_views_and_push_config_views() -> None:
    async with surface() as s:
        task_id = await s.create()
        config = {"taskId": task_id, "id": "c1", "url": "https://example.com/h", "token": "t"}
        await s.post("/tasks/commands/pushNotificationConfigs:create", config)
        status, body = await s.get("/tasks/views/allTasks", "agent")
        assert status == 200 and [r["id"] for r in body["rows"]] == [task_id]
        assert body["rows"][0]["context_id"] and body["rows"][0]["state"] == "Submitted"
        status, body = await s.get("/tasks/views/allPushNotificationConfigs", "agent")
        assert status == 200
        assert body["rows"] == [
            {
                "config_id": "c1",
                "task_id": task_id,
                "tenant": "",
                "url": "https://example.com/h",
                "token": "t",
                "row": f"{task_id}/c1",
                "state": "Active",
            }
        ]
        status, body = await s.get("/tasks/views/pushNotificationConfigs", task_id=task_id)
        assert status == 200 and [r["config_id"] for r in body["rows"]] == ["c1"]
        status, _ = await s.get("/tasks/views/pushNotificationConfigs")
        assert status == 422  # task_id is required


async def test_a_second_tenant_sees_nothing_on_the_surface() -> None:
    async with surface() as s:
        task_id = await s.create()
        await s.post(
            "/tasks/commands/pushNotificationConfigs:create",
            {"taskId": task_id, "id": "c1", "url": "https://example.com/h"},
        )
        for who, path in (
            ("other-client", "/tasks/views/tasks"),
            ("other-agent", "/tasks/views/allTasks"),
            ("other-agent", "/tasks/views/allPushNotificationConfigs"),
        ):
            status, body = await s.get(path, who)
            assert (status, body) == (200, {"rows": []}), (who, path)
        _, body = await s.get(
            "/tasks/views/pushNotificationConfigs", "other-client", task_id=task_id
        )
        assert body == {"rows": []}
        _, body = await s.get("/tasks/views/tasks", "other-client", tenant="")
        assert body == {"rows": []}  # naming the first tenant does not open it

        status, body = await s.post("/tasks/commands/tasks:get", {"id": task_id}, "other-client")
        assert (status, body["outcome"]) == (404, "not-found")
        status, body = await s.post(
            "/tasks/commands/tasks:get", {"id": task_id, "tenant": ""}, "other-client"
        )
        assert status in (404, 409)
        status, body = await s.post("/tasks/commands/tasks:cancel", {"id": task_id}, "other-client")
        assert (status, body["outcome"]) == (404, "not-found")
        status, body = await s.post(
            "/tasks/commands/message:send", {"message": message(taskId=task_id)}, "other-client"
        )
        assert (status, body["outcome"]) == (502, "task-not-found")
        status, body = await s.post(
            "/tasks/commands/pushNotificationConfigs:list", {"taskId": task_id}, "other-client"
        )
        assert (status, body["outcome"]) == (404, "task-not-found")
        for move in ("work", "complete", "fail"):
            status, body = await s.post(
                f"/tasks/commands/tasks:{move}", {"id": task_id}, "other-agent"
            )
            assert (status, body["outcome"]) == (404, "not-found")
        status, _ = await s.post(
            "/tasks/commands/tasks:update_artifact",
            {
                "id": task_id,
                "artifact": {"artifactId": "a", "parts": [{"text": "x"}]},
                "append": False,
                "last_chunk": True,
            },
            "other-agent",
        )
        assert status == 404
        claimed = await s.http.post(
            "/tasks/claims", json={"taskId": task_id}, headers={"X-API-Key": KEYS["other-agent"]}
        )
        assert claimed.status_code == 404
        # the first tenant's own view still has it, untouched
        _, body = await s.get("/tasks/views/tasks")
        assert [(r["id"], r["state"]) for r in body["rows"]] == [(task_id, "Submitted")]


async def test_a_second_tenant_sees_nothing_on_json_rpc_and_rest() -> None:
    async with surface() as s:
        task_id = await s.create()
        other = {"X-API-Key": KEYS["other-client"], "A2A-Version": "1.0"}
        mine = {"X-API-Key": KEYS["client"], "A2A-Version": "1.0"}
        call = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
        response = await s.http.post("/", json=call, headers=other)
        assert response.json()["error"]["code"] == -32001
        response = await s.http.post("/", json=call, headers=mine)
        assert response.json()["result"]["id"] == task_id
        listed = {"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}}
        response = await s.http.post("/", json=listed, headers=other)
        assert response.json()["result"]["tasks"] == []
        assert (await s.http.get(f"/tasks/{task_id}", headers=other)).status_code == 404
        assert (await s.http.get(f"/tasks/{task_id}", headers=mine)).status_code == 200
        response = await s.http.get("/tasks", headers=other)
        assert response.json()["tasks"] == []


async def test_bindings_answer_401_without_credentials() -> None:
    async with surface() as s:
        call = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
        response = await s.http.post("/", json=call, headers={"A2A-Version": "1.0"})
        assert response.json()["error"]["code"] == -32012  # UnauthenticatedError
        response = await s.http.get("/tasks/x", headers={"A2A-Version": "1.0"})
        assert response.status_code == 401
        card = (await s.http.get("/.well-known/agent-card.json")).json()
        assert card["securitySchemes"] == {
            "apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}}
        }
        assert card["securityRequirements"] == [{"schemes": {"apiKey": {}}}]


async def test_the_feed_is_scoped_and_resumes_after_the_last_event() -> None:
    async with surface() as s:
        engine = s.app.service.engine
        hub = FeedHub(engine)
        mine = await s.create("mine")
        await s.move(mine, "work")
        await s.create("theirs", who="other-client")

        async def take(tenant: str, after: tuple[int, int], count: int) -> list[str]:
            frames = follow(engine, hub, tenant, after, heartbeat=0.05)
            seen: list[str] = []
            try:
                async with asyncio.timeout(5):
                    async for frame in frames:
                        if frame.startswith(b"id:"):
                            seen.append(frame.decode())
                            if len(seen) == count:
                                return seen
            finally:
                await frames.aclose()  # type: ignore[attr-defined]
            return seen

        frames = await take("", (0, -1), 2)
        assert "a2a.tasks.TaskCreated" in frames[0] and mine in frames[0]
        assert "a2a.tasks.TaskStatusUpdated" in frames[1]
        theirs = await take("other", (0, -1), 1)
        assert mine not in theirs[0]
        # resume after the first event: exactly the second comes next
        first_id = frames[0].split("\n", 1)[0].removeprefix("id: ")
        position, _, index = first_id.partition("-")
        again = await take("", (int(position), int(index)), 1)
        assert again == frames[1:2]


async def test_the_feed_stops_when_the_worker_disconnects() -> None:
    from accord.server._http import Request

    async with surface() as s:
        await s.create()
        sent: list[dict[str, object]] = []
        gone = asyncio.Event()

        async def receive() -> dict[str, object]:
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, object]) -> None:
            sent.append(message)
            if b"a2a.tasks.TaskCreated" in message.get("body", b""):  # type: ignore[operator]
                gone.set()

        scope = {
            "type": "http",
            "method": "GET",
            "path": "/tasks/events",
            "headers": [(b"x-api-key", KEYS["agent"].encode())],
            "query_string": b"",
        }
        surface_app = s.app.endpoint(SurfaceApp)
        assert surface_app is not None
        await asyncio.wait_for(surface_app.handle(Request(scope, receive), send), 5)
        assert sent[0]["status"] == 200


@pytest.mark.parametrize(
    "last_event_id",
    [
        "9223372036854775808",  # past int64: the stream used to end, silently
        "9223372036854775807-9223372036854775808",
        "9" * 5000,
        "\u00b2",
        "5-",
        "x",
    ],
)
async def test_a_feed_position_it_never_issued_is_refused_with_422(last_event_id: str) -> None:
    async with surface() as s:
        for how in (
            {"headers": {"Last-Event-ID": last_event_id}},
            {"params": {"after": last_event_id}},
        ):
            headers = {"X-API-Key": KEYS["agent"], **how.get("headers", {})}
            request = s.http.build_request(
                "GET",
                "/tasks/events",
                headers={k: v.encode("latin-1") for k, v in headers.items()},
                params=how.get("params"),
            )
            # A position the feed took would open a stream that never ends: read its head only.
            response = await asyncio.wait_for(s.http.send(request, stream=True), 10)
            if response.status_code != 422:
                await response.aclose()
                raise AssertionError(f"{last_event_id[:24]!r} opened the feed")
            await response.aread()
            assert "Last-Event-ID" in response.json()["refused"]
