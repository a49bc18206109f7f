"""A harness's refusal over the command surface is said as what it is: a watcher's completion
is refused with the harness's rule (no outcome the seed declares: the surface's standard
answer for one, with the rule's words), not taken for a terminal task's refusal; a message to
a terminal task still is ``task-terminal``."""

from __future__ import annotations

from surface_helpers import PRINCIPALS, message, surface

from accord.harness import EVENT_MEDIA_TYPE, Conversation, conversation_agent

BOB_KEY = "bob-key-0123456789abcdef0123"
BOB = {"identity": "bob", "actors": ["a2a.tasks.Client"], "api_key": BOB_KEY}
CONTROL = {"data": {"kind": "control", "action": "complete"}, "mediaType": EVENT_MEDIA_TYPE}


async def answer(conversation: Conversation) -> str:
    return "noted"


async def test_a_harness_refusal_is_not_a_terminal_task() -> None:
    async with surface(conversation_agent(answer), principals=[*PRINCIPALS, BOB]) as s:
        people = [{"id": "bob", "kind": "human", "role": "watcher"}]
        brief = {
            "data": {"kind": "task", "payload": {"name": "n", "goal": "g", "participants": people}},
            "mediaType": EVENT_MEDIA_TYPE,
        }
        opening = {"message": message(parts=[{"text": "hi"}, brief])}
        status, body = await s.post("/tasks/commands/message:send", opening)
        assert status == 200, body
        task_id = body["response"]["task"]["id"]
        refused = await s.http.post(
            "/tasks/commands/message:send",
            json={"message": message(taskId=task_id, parts=[CONTROL])},
            headers={"X-API-Key": BOB_KEY, "A2A-Version": "1.0"},
        )
        assert refused.status_code == 501, refused.text
        assert refused.json() == {
            "refused": "a watcher cannot complete the task (it takes an assignee, reporter or "
            "admin)",
            "committed": False,
        }
        status, body = await s.post(
            "/tasks/commands/message:send", {"message": message(taskId=task_id, parts=[CONTROL])}
        )
        assert status == 200, body
        status, body = await s.post(
            "/tasks/commands/message:send", {"message": message("again", taskId=task_id)}
        )
        assert (status, body["outcome"]) == (502, "task-terminal")
