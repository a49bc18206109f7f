"""Every command of the surface: each declared outcome reached, with its status code, body
(checked against the seed's response schema) and ``published`` list."""

from __future__ import annotations

from typing import Any

import pytest
from surface_helpers import KEYS, message, surface

from accord.agents._api import RequestContext, TaskHandle
from accord.agents._description import CardDescription

SEND = "/tasks/commands/message:send"
TEXT_ONLY = CardDescription(default_input_modes=["text/plain"])  # with strict_input_modes
STREAM = "/tasks/commands/message:stream"
MOVES = {
    "work": ("a2a.tasks.StartWorking", "TASK_STATE_WORKING"),
    "complete": ("a2a.tasks.CompleteTask", "TASK_STATE_COMPLETED"),
    "fail": ("a2a.tasks.FailTask", "TASK_STATE_FAILED"),
    "reject": ("a2a.tasks.RejectTask", "TASK_STATE_REJECTED"),
    "require_input": ("a2a.tasks.RequireInput", "TASK_STATE_INPUT_REQUIRED"),
    "require_auth": ("a2a.tasks.RequireAuth", "TASK_STATE_AUTH_REQUIRED"),
}


def events(body: dict[str, Any]) -> list[str]:
    return [p["event"] for p in body["published"]]


# --- the standard refusal, authentication ------------------------------------------------


@pytest.mark.parametrize(
    ("path", "who", "actor"),
    [
        ("/tasks/commands/tasks:complete", "client", "a2a.discovery.Client"),
        ("/tasks/commands/tasks:complete", "nobody", None),
        (SEND, "agent", "a2a.tasks.Agent"),
        (SEND, "nobody", None),
        ("/tasks/commands/tasks:get", "agent", "a2a.tasks.Agent"),
        ("/discovery/commands/extendedAgentCard", "agent", "a2a.tasks.Agent"),
    ],
)
async def test_standard_refusal_before_anything_is_read(
    path: str, who: str, actor: str | None
) -> None:
    async with surface() as s:
        # a body that would be a 422 if it were read: the grant is checked first
        status, body = await s.post(path, {"bogus": True}, who)
        assert (status, body) == (403, {"refused": "not granted", "actor": actor})


@pytest.mark.parametrize(
    ("path", "who"),
    [
        ("/tasks/views/allTasks", "client"),
        ("/tasks/views/allPushNotificationConfigs", "nobody"),
        ("/tasks/views/tasks", "agent"),
        ("/tasks/views/pushNotificationConfigs", "nobody"),
    ],
)
async def test_views_refuse_actors_without_the_grant(path: str, who: str) -> None:
    async with surface() as s:
        status, body = await s.get(path, who, task_id="x")
        assert status == 403 and body["refused"] == "not granted"


async def test_unauthenticated_requests_get_401() -> None:
    async with surface() as s:
        response = await s.http.post("/tasks/commands/tasks:work", json={"id": "x"})
        assert response.status_code == 401
        response = await s.http.get("/tasks/views/tasks", headers={"X-API-Key": "wrong-key"})
        assert response.status_code == 401
        assert (await s.http.get("/openapi.json")).status_code == 200  # the contract is public


async def test_open_mode_grants_every_actor() -> None:
    async with surface(principals=[]) as s:
        response = await s.http.post(
            SEND,
            json={"message": message(), "configuration": {"returnImmediately": True}},
            headers={"A2A-Version": "1.0"},
        )
        task_id = response.json()["response"]["task"]["id"]
        response = await s.http.post("/tasks/commands/tasks:work", json={"id": task_id})
        assert response.status_code == 202


# --- agent commands ------------------------------------------------------------------------


@pytest.mark.parametrize("move", list(MOVES))
async def test_agent_move_outcomes(move: str) -> None:
    _, state = MOVES[move]
    async with surface() as s:
        task_id = await s.create()
        path = f"/tasks/commands/tasks:{move}"
        status_message = {"messageId": "s", "role": "ROLE_AGENT", "parts": [{"text": "why"}]}
        status, body = await s.post(
            path, {"id": task_id, "status_message": status_message}, "agent"
        )
        assert status == 202 and body["outcome"] == "moved"
        [published] = body["published"]
        assert published["event"] == "a2a.tasks.TaskStatusUpdated"
        assert published["payload"]["task_id"] == task_id
        assert published["payload"]["status"]["state"] == state
        assert published["payload"]["status"]["message"]["parts"] == [{"text": "why"}]

        status, body = await s.post(path, {"id": "no-such-task"}, "agent")
        assert (status, body["outcome"], body["error"]) == (
            404,
            "not-found",
            "a2a.tasks.TaskNotFound",
        )

        ended = await s.create()
        assert await s.move(ended, "fail") == 202
        status, body = await s.post(path, {"id": ended}, "agent")
        assert (status, body["outcome"]) == (409, "wrong-state")
        assert body["error"] == "a2a.tasks.TaskStateConflict"
        assert body["payload"] == {"state": "Failed"}


async def test_update_artifact_outcomes() -> None:
    async with surface() as s:
        task_id = await s.create()
        artifact = {"artifactId": "a1", "name": "out", "parts": [{"text": "chunk"}]}
        body = {"id": task_id, "artifact": artifact, "append": False, "last_chunk": True}
        status, answer = await s.post("/tasks/commands/tasks:update_artifact", body, "agent")
        assert status == 202 and answer["outcome"] == "updated"
        [published] = answer["published"]
        assert published["event"] == "a2a.tasks.TaskArtifactUpdated"
        assert published["payload"]["artifact"]["parts"] == [{"text": "chunk"}]
        body["id"] = "nope"
        status, answer = await s.post("/tasks/commands/tasks:update_artifact", body, "agent")
        assert (status, answer["outcome"]) == (404, "not-found")


async def test_agent_input_is_validated_with_field_errors() -> None:
    async with surface() as s:
        status, body = await s.post(
            "/tasks/commands/tasks:update_artifact", {"id": "x", "artifact": {}}, "agent"
        )
        assert status == 422 and body["errors"]
        status, body = await s.post("/tasks/commands/tasks:work", {"id": 5}, "agent")
        assert status == 422 and body["errors"][0]["field"] == "id"


# --- SendMessage and SendStreamingMessage --------------------------------------------------


async def replying(ctx: RequestContext, task: TaskHandle) -> None:
    if ctx.text == "reply":
        await task.reply("a direct answer")
        return
    await task.start_working()
    await task.complete()


async def test_send_message_outcomes() -> None:
    async with surface(tasks_per_tenant=3, messages_per_task=2) as s:
        status, body = await s.post(
            SEND, {"message": message(), "configuration": {"returnImmediately": True}}
        )
        assert (status, body["outcome"], events(body)) == (
            200,
            "task-created",
            ["a2a.tasks.TaskCreated"],
        )
        task_id = body["response"]["task"]["id"]
        assert body["published"][0]["payload"] == {"task_id": task_id}

        await s.move(task_id, "require_input")
        cont = {"message": message(taskId=task_id), "configuration": {"returnImmediately": True}}
        status, body = await s.post(SEND, cont)
        assert (status, body["outcome"], body["published"]) == (200, "continued", [])

        # another message (the same one again would be a retry: answered, not stored twice)
        more = {"message": message(taskId=task_id), "configuration": {"returnImmediately": True}}
        status, body = await s.post(SEND, more)  # history holds 2 messages already
        assert (status, body["outcome"]) == (502, "history-limit")
        assert body["error"] == "a2a.tasks.ResourceExhausted"

        status, body = await s.post(SEND, {"message": message(taskId="nope")})
        assert (status, body["outcome"]) == (502, "task-not-found")

        other = await s.create()
        status, body = await s.post(
            SEND, {"message": message(taskId=other, contextId="not-its-context")}
        )
        assert (status, body["outcome"]) == (502, "context-mismatch")

        await s.move(other, "reject")
        status, body = await s.post(SEND, {"message": message(taskId=other)})
        assert (status, body["outcome"]) == (502, "task-terminal")

        await s.create()  # the third task of the tenant
        status, body = await s.post(SEND, {"message": message()})
        assert (status, body["outcome"]) == (502, "task-limit")

        status, body = await s.post(SEND, {"message": message()}, version=None)
        assert (status, body["outcome"]) == (502, "version-not-supported")
        status, body = await s.post(SEND, {"message": {"role": "ROLE_USER"}})
        assert status == 422 and body["errors"]


async def test_direct_message_content_type_and_a_blocking_send() -> None:
    async with surface(agent=replying, strict_input_modes=True, card=TEXT_ONLY) as s:
        status, body = await s.post(SEND, {"message": message("reply")})
        assert (status, body["outcome"], body["published"]) == (200, "direct-message", [])
        assert body["response"]["message"]["parts"] == [{"text": "a direct answer"}]

        status, body = await s.post(SEND, {"message": message("work")})
        assert body["outcome"] == "task-created"
        assert body["response"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"

        data = {"messageId": "m", "role": "ROLE_USER", "parts": [{"data": {"a": 1}}]}
        status, body = await s.post(SEND, {"message": data})
        assert (status, body["outcome"]) == (502, "content-type-not-supported")


async def test_streaming_message_outcomes() -> None:
    async with surface() as s:
        status, body = await s.post(STREAM, {"message": message()})
        assert (status, body["outcome"]) == (200, "task-created")
        assert events(body) == ["a2a.tasks.TaskCreated", "a2a.tasks.MessageStreamResponse"]
        task_id = body["response"]["task"]["id"]
        assert body["published"][1]["payload"]["task"]["id"] == task_id

        await s.move(task_id, "require_input")
        status, body = await s.post(STREAM, {"message": message(taskId=task_id)})
        assert (status, body["outcome"]) == (200, "continued")
        assert events(body) == ["a2a.tasks.MessageStreamResponse"]
    async with surface(agent=replying) as s:
        status, body = await s.post(STREAM, {"message": message("reply")})
        assert (status, body["outcome"]) == (200, "direct-message")
    async with surface(streaming=False) as s:
        status, body = await s.post(STREAM, {"message": message()})
        assert (status, body["outcome"]) == (502, "streaming-not-supported")


# --- GetTask, CancelTask, SubscribeToTask ---------------------------------------------------


async def test_get_cancel_subscribe_outcomes() -> None:
    async with surface() as s:
        task_id = await s.create()
        status, body = await s.post(
            "/tasks/commands/tasks:get", {"id": task_id, "historyLength": 0}
        )
        assert (status, body["outcome"]) == (200, "found")
        assert (
            body["response"]["task"]["id"] == task_id and "history" not in body["response"]["task"]
        )
        status, body = await s.post("/tasks/commands/tasks:get", {"id": "nope"})
        assert (status, body["outcome"]) == (404, "not-found")
        status, body = await s.post("/tasks/commands/tasks:get", {"id": task_id, "tenant": "other"})
        assert (status, body["outcome"]) == (409, "other-tenant")

        status, body = await s.post("/tasks/commands/tasks:subscribe", {"id": task_id})
        assert (status, body["outcome"]) == (200, "subscribed")
        status, body = await s.post("/tasks/commands/tasks:subscribe", {"id": "nope"})
        assert (status, body["outcome"]) == (404, "not-found")

        status, body = await s.post("/tasks/commands/tasks:cancel", {"id": task_id})
        assert (status, body["outcome"]) == (200, "canceled")
        assert events(body) == ["a2a.tasks.TaskStatusUpdated"]
        assert body["published"][0]["payload"]["status"]["state"] == "TASK_STATE_CANCELED"
        status, body = await s.post("/tasks/commands/tasks:cancel", {"id": task_id})
        assert (status, body["outcome"]) == (409, "not-cancelable")
        status, body = await s.post("/tasks/commands/tasks:cancel", {"id": "nope"})
        assert (status, body["outcome"]) == (404, "not-found")

        status, body = await s.post("/tasks/commands/tasks:subscribe", {"id": task_id})
        assert (status, body["outcome"]) == (409, "task-terminal")
        status, body = await s.post("/tasks/commands/tasks:get", {"id": task_id}, version="2.0")
        assert (status, body["outcome"]) == (502, "version-not-supported")
    async with surface(streaming=False) as s:
        status, body = await s.post("/tasks/commands/tasks:subscribe", {"id": "x"})
        assert (status, body["outcome"]) == (502, "streaming-not-supported")


# --- push-notification configs ---------------------------------------------------------------

PUSH = "/tasks/commands/pushNotificationConfigs:"


async def test_push_config_outcomes() -> None:
    async with surface(push_configs_per_task=1) as s:
        task_id = await s.create()
        config = {"taskId": task_id, "id": "c1", "url": "https://example.com/hook"}
        status, body = await s.post(PUSH + "create", config)
        assert (status, body["outcome"]) == (200, "created")
        assert body["published"] == [
            {
                "event": "a2a.tasks.PushNotificationConfigCreated",
                "payload": {"row": f"{task_id}/c1", "config_id": "c1", "task_id": task_id},
            }
        ]
        status, body = await s.post(
            PUSH + "create", {"taskId": task_id, "url": "https://a.example"}
        )
        assert (status, body["outcome"]) == (502, "config-limit")
        status, body = await s.post(PUSH + "create", {"taskId": "nope", "url": "https://a.example"})
        assert (status, body["outcome"]) == (409, "task-not-found")

        status, body = await s.post(PUSH + "get", {"taskId": task_id, "id": "c1"})
        assert (status, body["outcome"]) == (200, "found")
        assert body["response"]["config"]["url"] == "https://example.com/hook"
        status, body = await s.post(PUSH + "get", {"taskId": task_id, "id": "c9"})
        assert (status, body["outcome"]) == (409, "config-not-found")
        status, body = await s.post(PUSH + "get", {"taskId": "nope", "id": "c1"})
        assert (status, body["outcome"]) == (404, "not-found")

        status, body = await s.post(PUSH + "list", {"taskId": task_id})
        assert (status, body["outcome"]) == (200, "listed")
        assert [c["id"] for c in body["response"]["configs"]] == ["c1"]
        status, body = await s.post(PUSH + "list", {"taskId": "nope"})
        assert (status, body["outcome"]) == (404, "task-not-found")
        status, body = await s.post(PUSH + "list", {"taskId": task_id, "tenant": "other"})
        assert (status, body["outcome"]) == (409, "other-tenant")

        status, body = await s.post(PUSH + "delete", {"taskId": task_id, "id": "c1"})
        assert (status, body["outcome"]) == (202, "deleted")
        assert events(body) == ["a2a.tasks.PushNotificationConfigDeleted"]
        status, body = await s.post(PUSH + "delete", {"taskId": "nope", "id": "c1"})
        assert (status, body["outcome"]) == (404, "task-not-found")

        status, body = await s.post(
            PUSH + "create", {"taskId": task_id, "url": "https://b.example"}
        )
        assert (status, body["outcome"]) == (200, "assigned")
    async with surface(push_notifications=False) as s:
        for command, body_in in (
            ("create", {"taskId": "t", "url": "https://a.example"}),
            ("get", {"taskId": "t", "id": "c"}),
            ("list", {"taskId": "t"}),
            ("delete", {"taskId": "t", "id": "c"}),
        ):
            status, body = await s.post(PUSH + command, body_in)
            assert (status, body["outcome"]) == (502, "push-not-supported")


async def test_extended_card_outcomes() -> None:
    async with surface(extended_card=True) as s:
        status, body = await s.post("/discovery/commands/extendedAgentCard", {})
        assert (status, body["outcome"]) == (200, "returned")
        assert "extended" in body["response"]["card"]["description"]
        status, body = await s.post("/discovery/commands/extendedAgentCard", {}, version="0.3")
        assert (status, body["outcome"]) == (502, "version-not-supported")
    async with surface() as s:
        status, body = await s.post("/discovery/commands/extendedAgentCard", {})
        assert (status, body["outcome"]) == (502, "not-supported")


async def test_unknown_paths_and_methods() -> None:
    async with surface() as s:
        assert (await s.http.post("/tasks/commands/tasks:nope")).status_code in (401, 404)
        headers = {"X-API-Key": "client-key-0123456789abcdef"}
        response = await s.http.post("/tasks/commands/tasks:nope", headers=headers)
        assert response.status_code == 404
        response = await s.http.get("/tasks/commands/tasks:get", headers=headers)
        assert response.status_code == 405


# --- outcomes decided outside the request, reached by changing the running service ---------

NEGOTIATED_BODIES = {
    "/discovery/commands/extendedAgentCard": {},
    SEND: {"message": message()},
    STREAM: {"message": message()},
    "/tasks/commands/tasks:get": {"id": "x"},
    "/tasks/commands/tasks:cancel": {"id": "x"},
    "/tasks/commands/tasks:subscribe": {"id": "x"},
    PUSH + "create": {"taskId": "x", "url": "https://a.example"},
    PUSH + "get": {"taskId": "x", "id": "c"},
    PUSH + "list": {"taskId": "x"},
    PUSH + "delete": {"taskId": "x", "id": "c"},
}


@pytest.mark.parametrize("path", list(NEGOTIATED_BODIES))
async def test_version_and_extension_outcomes_of_every_client_command(path: str) -> None:
    from accord.wire._model import AgentExtension

    async with surface(extended_card=True) as s:
        status, body = await s.post(path, NEGOTIATED_BODIES[path], version="0.3")
        assert (status, body["outcome"]) == (502, "version-not-supported")
        assert body["error"].endswith(".VersionNotSupported")
        required = AgentExtension(uri="https://example.com/ext/required", required=True)
        s.app.service.card.capabilities.extensions = [required]
        status, body = await s.post(path, NEGOTIATED_BODIES[path])
        assert (status, body["outcome"]) == (502, "extension-required")
        assert body["error"].endswith(".ExtensionSupportRequired")


async def test_extended_card_not_configured_and_context_not_accepted() -> None:
    import dataclasses

    async with surface(extended_card=True) as s:
        s.app.service.extended_card = None
        status, body = await s.post("/discovery/commands/extendedAgentCard", {})
        assert (status, body["outcome"]) == (502, "not-configured")
        engine = s.app.service.engine
        engine.config = dataclasses.replace(engine.config, accept_client_context_ids=False)
        status, body = await s.post(SEND, {"message": message(contextId="mine")})
        assert (status, body["outcome"]) == (502, "context-not-accepted")
        status, body = await s.post(STREAM, {"message": message(contextId="mine")})
        assert (status, body["outcome"]) == (502, "context-not-accepted")


async def test_bounds_are_input_refusals() -> None:
    async with surface(max_body_bytes=2048, max_parts=2) as s:
        status, body = await s.post(SEND, {"message": message("x" * 4096)})
        assert status == 422 and "exceeds" in body["refused"]
        parts = [{"text": "a"}, {"text": "b"}, {"text": "c"}]
        status, body = await s.post(SEND, {"message": message() | {"parts": parts}})
        assert status == 422 and body["errors"][0]["field"] == "message.parts"


DEEP = "[" * 1100 + "]" * 1100  # past the JSON parser's recursion limit


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/tasks/commands/tasks:work",
            '{"id": "t", "status_message": {"messageId": "m", "role": "ROLE_AGENT",'
            f' "parts": [], "metadata": {{"a": {DEEP}}}}}}}',
            "status_message.metadata",
        ),
        (
            "/tasks/commands/tasks:update_artifact",
            '{"id": "t", "append": false, "last_chunk": true,'
            f' "artifact": {{"artifactId": "a", "parts": [], "metadata": {{"a": {DEEP}}}}}}}',
            "artifact.metadata",
        ),
        (
            "/tasks/commands/pushNotificationConfigs:create",
            f'{{"task_id": "t", "url": "https://h.example/", "authentication": {DEEP}}}',
            "authentication",
        ),
        (SEND, f'{{"message": {{"parts": [{{"data": {DEEP}}}]}}}}', "message.parts[0].data"),
    ],
)
async def test_json_nested_past_the_parser_is_a_field_error(
    path: str, body: str, field: str
) -> None:
    async with surface() as s:
        who = "agent" if "tasks:" in path and "tasks:get" not in path else "client"
        response = await s.http.post(
            path,
            content=body,
            headers={
                "X-API-Key": KEYS[who],
                "A2A-Version": "1.0",
                "content-type": "application/json",
            },
        )
        assert response.status_code == 422, response.text
        assert response.json()["errors"] == [
            {"field": field, "message": "nested too deeply to be read"}
        ]


async def test_an_artifact_nested_past_max_depth_is_a_field_error() -> None:
    async with surface(max_depth=4) as s:
        task_id = await s.create()
        assert await s.move(task_id, "work") == 202
        deep: object = "leaf"
        for _ in range(6):
            deep = {"a": deep}
        artifact = {"artifactId": "a", "parts": [{"data": deep}]}
        status, body = await s.post(
            "/tasks/commands/tasks:update_artifact",
            {"id": task_id, "artifact": artifact, "append": False, "last_chunk": True},
            "agent",
        )
        assert status == 422 and body["errors"][0]["field"] == "artifact.parts[0].data"


async def test_streaming_message_refusals() -> None:
    async with surface(tasks_per_tenant=3, messages_per_task=1) as s:
        status, body = await s.post(STREAM, {"message": message(taskId="nope")})
        assert (status, body["outcome"], body["published"]) == (502, "task-not-found", [])
        task_id = await s.create()
        status, body = await s.post(STREAM, {"message": message(taskId=task_id, contextId="x")})
        assert (status, body["outcome"]) == (502, "context-mismatch")
        status, body = await s.post(STREAM, {"message": message(taskId=task_id)})
        assert (status, body["outcome"]) == (502, "history-limit")
        await s.move(task_id, "reject")
        status, body = await s.post(STREAM, {"message": message(taskId=task_id)})
        assert (status, body["outcome"]) == (502, "task-terminal")
        await s.create()
        await s.create()
        status, body = await s.post(STREAM, {"message": message()})
        assert (status, body["outcome"]) == (502, "task-limit")
    async with surface(strict_input_modes=True, card=TEXT_ONLY) as s:
        data = {"messageId": "m", "role": "ROLE_USER", "parts": [{"data": {"a": 1}}]}
        status, body = await s.post(STREAM, {"message": data})
        assert (status, body["outcome"]) == (502, "content-type-not-supported")
