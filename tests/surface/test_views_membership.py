"""The command surface's client views keep the harness's membership boundary: a client sees
in ``a2a.tasks.Tasks`` and ``a2a.tasks.TaskPushNotificationConfigs`` only the conversations
GetTask and ListTasks would show it; the Agent actor's views read the whole tenant."""

from __future__ import annotations

from typing import Any

from surface_helpers import PRINCIPALS, message, surface

from accord.harness import Conversation, conversation_agent

BOB_KEY = "bob-key-0123456789abcdef0123"
BOB = {"identity": "bob", "actors": ["a2a.tasks.Client"], "api_key": BOB_KEY}


async def answer(conversation: Conversation) -> str:
    return "noted"


async def test_a_client_sees_only_its_own_conversations_in_the_views() -> None:
    principals = [*PRINCIPALS, BOB]
    async with surface(conversation_agent(answer), principals=principals) as s:
        status, body = await s.post("/tasks/commands/message:send", {"message": message("a")})
        assert status == 200, body
        mine = body["response"]["task"]["id"]
        sent = await s.http.post(
            "/tasks/commands/message:send",
            json={"message": message("b")},
            headers={"X-API-Key": BOB_KEY, "A2A-Version": "1.0"},
        )
        assert sent.status_code == 200, sent.text
        bobs: str = sent.json()["response"]["task"]["id"]
        config = {"task_id": bobs, "url": "https://hooks.example.com/x"}
        created = await s.http.post(
            "/tasks/commands/pushNotificationConfigs:create",
            json=config,
            headers={"X-API-Key": BOB_KEY, "A2A-Version": "1.0"},
        )
        assert created.status_code in (200, 202), created.text

        def ids(body: Any) -> set[str]:
            return {row["id"] for row in body["rows"]}

        _, as_client = await s.get("/tasks/views/tasks", "client")
        assert ids(as_client) == {mine}  # bob's conversation is not listed to "client"
        _, configs = await s.get("/tasks/views/pushNotificationConfigs", "client", task_id=bobs)
        assert configs["rows"] == []  # nor its webhooks (and their tokens)
        _, every = await s.get("/tasks/views/allTasks", "agent")
        assert ids(every) == {mine, bobs}
