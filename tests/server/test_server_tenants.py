"""Tenant isolation: callers authenticated into tenant B never see tenant A's tasks, on any
operation and either binding; authentication itself is enforced."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import message, reason, rest_reason, rpc, serve_settings

from accord.app._settings import Principal

A = {"Authorization": "Bearer token-a"}
B = {"Authorization": "Bearer token-b"}


@pytest.fixture(params=["memory", "sqlite"])
async def http(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """On memory and on SQLite, whose GetTask hands out the stored snapshot unread."""
    tokens = {
        "token-a": Principal(identity="alice", tenant="tenant-a"),
        "token-b": Principal(identity="bob", tenant="tenant-b"),
    }
    store = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 't.db'}"
    async with serve_settings(bearer_tokens=tokens, require_auth=True, store=store) as client:
        yield client


async def task_of_a(http: httpx.AsyncClient, text: str = "hi") -> dict[str, Any]:
    response = await http.post("/message:send", json={"message": message(text)}, headers=A)
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()["task"]
    return task


async def test_unauthenticated_requests_are_refused(http: httpx.AsyncClient) -> None:
    response = await http.get("/tasks")
    assert response.status_code == 401
    assert rest_reason(response) == "UNAUTHENTICATED"
    wrong = await http.get("/tasks", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    reply = await rpc(http, "ListTasks", {})
    assert reply["error"]["code"] == -32012


async def test_rest_operations_of_b_never_find_a_task_of_a(http: httpx.AsyncClient) -> None:
    task = await task_of_a(http)
    tid = task["id"]
    assert (await http.get(f"/tasks/{tid}", headers=A)).status_code == 200
    created = await http.post(
        f"/tasks/{tid}/pushNotificationConfigs",
        json={"id": "cfg", "url": "https://example.com/a"},
        headers=A,
    )
    assert created.status_code == 200, created.text

    not_found = [
        await http.get(f"/tasks/{tid}", headers=B),
        await http.post(f"/tasks/{tid}:cancel", json={}, headers=B),
        await http.post(f"/tasks/{tid}:subscribe", headers=B),
        await http.post(f"/tasks/{tid}:subscribe", headers={**B, "Last-Event-ID": "0"}),
        await http.get(f"/tasks/{tid}/pushNotificationConfigs", headers=B),
        await http.get(f"/tasks/{tid}/pushNotificationConfigs/cfg", headers=B),
        await http.delete(f"/tasks/{tid}/pushNotificationConfigs/cfg", headers=B),
        await http.post(
            f"/tasks/{tid}/pushNotificationConfigs",
            json={"id": "cfg2", "url": "https://example.com/b"},
            headers=B,
        ),
        await http.post(
            "/message:send",
            json={"message": message(taskId=tid, contextId=task["contextId"])},
            headers=B,
        ),
    ]
    for response in not_found:
        assert response.status_code == 404, response.request.url
        assert rest_reason(response) == "TASK_NOT_FOUND"
    assert (await http.get("/tasks", headers=B)).json()["tasks"] == []
    by_context = await http.get("/tasks", params={"contextId": task["contextId"]}, headers=B)
    assert by_context.json()["totalSize"] == 0

    # A's config survived B's delete attempt.
    kept = await http.get(f"/tasks/{tid}/pushNotificationConfigs/cfg", headers=A)
    assert kept.status_code == 200


async def test_jsonrpc_operations_of_b_never_find_a_task_of_a(http: httpx.AsyncClient) -> None:
    task = await task_of_a(http)
    tid = task["id"]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("GetTask", {"id": tid}),
        ("CancelTask", {"id": tid}),
        ("SubscribeToTask", {"id": tid}),
        ("ListTaskPushNotificationConfigs", {"taskId": tid}),
        ("GetTaskPushNotificationConfig", {"taskId": tid, "id": "x"}),
        ("DeleteTaskPushNotificationConfig", {"taskId": tid, "id": "x"}),
        ("CreateTaskPushNotificationConfig", {"taskId": tid, "url": "https://example.com/b"}),
        ("SendMessage", {"message": message(taskId=tid)}),
        ("SendStreamingMessage", {"message": message(taskId=tid)}),
    ]
    for method, params in calls:
        reply = await rpc(http, method, params, headers=B)
        assert reply["error"]["code"] == -32001, method
        assert reason(reply["error"]["data"]) == "TASK_NOT_FOUND"
    listed = await rpc(http, "ListTasks", {}, headers=B)
    assert listed["result"]["totalSize"] == 0
    mine = await rpc(http, "ListTasks", {}, headers=A)
    assert [t["id"] for t in mine["result"]["tasks"]] == [tid]


async def test_naming_another_tenant_in_the_path_finds_nothing(http: httpx.AsyncClient) -> None:
    task = await task_of_a(http)
    response = await http.get(f"/tenant-a/tasks/{task['id']}", headers=B)
    assert response.status_code in (403, 404)
    assert task["id"] not in response.text
    own = await http.get(f"/tenant-a/tasks/{task['id']}", headers=A)
    assert own.status_code == 200
    listed = await http.get("/tenant-a/tasks", headers=B)
    assert listed.status_code in (403, 404)
    assert task["id"] not in listed.text


async def test_same_context_id_in_two_tenants_stays_apart(http: httpx.AsyncClient) -> None:
    shared = "shared-context"
    for headers in (A, B):
        sent = await http.post(
            "/message:send", json={"message": message(contextId=shared)}, headers=headers
        )
        assert sent.status_code == 200
    for headers in (A, B):
        listed = (await http.get("/tasks", params={"contextId": shared}, headers=headers)).json()
        assert listed["totalSize"] == 1
