"""``accord chat`` as a person reads it, driven by Textual's own driver against a running
server: what you send shows at once and in order, one label for the agent (its name), a reply
cut by a server restart marked interrupted with no cursor left behind, a help request shown
once with its options numbered (a number answers), a new conversation after one ends (and a
task per message for an agent that is not a conversation), and ``/invite``."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.chat.test_chat import ALICE, chat, header, lines, running, say, texts, until
from tests.dashboard.server_proc import serve
from textual.pilot import Pilot

from accord.agents._echo import echo
from accord.chat._app import ChatApp
from accord.chat._conversation import Conversation as Shown
from accord.harness import Conversation, HarnessSettings, ModelResponse
from accord.harness._agent import HarnessAgent
from accord.harness.channels import ask_participant_call
from accord.harness.models import FunctionModel
from accord.wire import Artifact, Message, Part, Role, Task, TaskState, TaskStatus

HERE = Path(__file__).resolve().parent
TASK_KEY = "io.github.madarauchiha-314.tiny-harness/task"
EVENT_MEDIA_TYPE = "application/vnd.tiny-harness.event+json"


def _turn(conversation: Conversation) -> str | ModelResponse:
    if conversation.text == "when?":
        return ask_participant_call("alice", "Which month suits you?", options=["June", "July"])
    return f"heard {conversation.sender}: {conversation.text}"


@asynccontextmanager
async def talking(
    agent: Any, participant: str = "alice"
) -> AsyncIterator[tuple[ChatApp, Pilot[Any]]]:
    """A chat connected to ``agent``, served in process."""
    async with running(agent) as url:
        app = chat(url, participant=participant)
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.client is not None, "connected")
            yield app, pilot


planner = HarnessAgent(
    HarnessSettings(agent_id="planner", model="function"),
    {"function": FunctionModel(_turn)},
)


async def test_every_line_you_send_shows_at_once_and_in_order() -> None:
    async with talking(planner) as (app, pilot):
        await say(pilot, "hello")
        await until(pilot, lambda: "— your turn" in header(app), "your turn")
        await say(pilot, "/status")
        await until(pilot, lambda: any(t.startswith("Task ") for t in texts(app)), "status")
        await say(pilot, "/help")
        await until(pilot, lambda: any(t.startswith("Commands ") for t in texts(app)), "help")
        await say(pilot, "goodbye")
        await until(pilot, lambda: "heard alice: goodbye" in texts(app), "the last reply")
        said = texts(app)
        order = [
            said.index("hello"),
            said.index("heard alice: hello"),
            said.index("/status"),
            next(n for n, t in enumerate(said) if t.startswith("Task ")),
            said.index("/help"),
            next(n for n, t in enumerate(said) if t.startswith("Commands ")),
            said.index("goodbye"),
            said.index("heard alice: goodbye"),
        ]
        assert order == sorted(order), said
        assert said.count("/status") == 1 and said.count("hello") == 1, said
        # One label for what the agent writes: its name.
        agent_lines = [v.line for v in lines(app) if v.line.kind == "reply"]
        assert {line.who for line in agent_lines} == {"accord agent"}  # its card's name
        shown = [str(view.render()) for view in lines(app)]
        assert "accord agent: heard alice: hello" in shown


async def test_a_help_request_is_shown_once_with_its_options_to_pick() -> None:
    async with talking(planner) as (app, pilot):
        await say(pilot, "when?")
        await until(pilot, lambda: "your answer is awaited" in header(app), "the request")
        asked = [v for v in lines(app) if "Which month suits you?" in v.line.text]
        assert len(asked) == 1, texts(app)
        [view] = asked
        assert view.line.kind == "help" and view.has_class("for-me")
        assert view.line.text == (
            "[help request to alice from planner] Which month suits you?\n  1. June\n  2. July"
        )
        hint = str(app.query_one("#hint").render())
        assert "1 to 2" in hint
        await say(pilot, "2")
        heard = 'heard alice: Reply from alice to "Which month suits you?": July'
        await until(pilot, lambda: heard in texts(app), "the answer heard")
        said = texts(app)
        assert said.index("July") == said.index(heard) - 1, said  # the option picked, sent
        assert "— your turn" in header(app)


async def test_a_new_conversation_after_one_ends() -> None:
    async with talking(planner) as (app, pilot):
        await say(pilot, "first")
        await until(pilot, lambda: "— your turn" in header(app), "your turn")
        first = app.conversation.task_id
        await pilot.press("ctrl+d")
        await until(pilot, lambda: "completed — ended" in header(app), "completed")
        await until(pilot, lambda: any("Ctrl+N" in t for t in texts(app)), "the offer")
        assert "Ctrl+N or /new" in header(app)
        await say(pilot, "still there?")
        assert any("has ended" in t for t in texts(app)[-1:])
        await pilot.press("ctrl+n")
        assert "new — say something to start" in header(app)
        app.query_one("#input").value = ""  # (the line kept after the refusal)
        await say(pilot, "second")
        await until(pilot, lambda: "heard alice: second" in texts(app), "a new reply")
        assert app.conversation.task_id not in ("", first)
        await pilot.press("ctrl+d")
        await until(pilot, lambda: "completed — ended" in header(app), "completed again")
        await say(pilot, "/new")
        await say(pilot, "third")
        await until(pilot, lambda: "heard alice: third" in texts(app), "the third")


async def test_an_agent_that_is_not_a_conversation_gets_a_task_per_message() -> None:
    async with talking(echo, participant="") as (app, pilot):
        await say(pilot, "one")
        await until(pilot, lambda: "echo: one" in texts(app), "the first answer")
        await until(pilot, lambda: "completed" in header(app), "completed")
        first = app.conversation.task_id
        assert "say something for a new task" in header(app)
        await say(pilot, "two")
        await until(pilot, lambda: "echo: two" in texts(app), "the second answer")
        assert app.conversation.task_id != first
        assert texts(app) == ["one", "echo: one", "two", "echo: two"]
        assert {v.line.who for v in lines(app) if v.line.kind == "reply"} == {"accord agent"}


async def test_invite_adds_a_participant() -> None:
    async with (
        running(planner) as url,
        httpx.AsyncClient(base_url=url, headers={"A2A-Version": "1.0"}) as http,
    ):
        brief = {
            "kind": "task",
            "payload": {
                "name": "offsite",
                "goal": "a plan",
                "participants": [{"id": "alice", "kind": "human", "role": "admin"}],
            },
        }
        message = {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "parts": [{"text": "hi"}, {"data": brief, "mediaType": EVENT_MEDIA_TYPE}],
        }
        answer = await http.post("/message:send", json={"message": message}, headers=ALICE)
        task_id = answer.json()["task"]["id"]

        async def people() -> dict[str, str]:
            got = await http.get(f"/tasks/{task_id}", headers=ALICE)
            listed = got.json()["metadata"][TASK_KEY]["participants"]
            return {p["id"]: p["role"] for p in listed}

        app = chat(url, task_id=task_id)
        async with app.run_test() as pilot:
            await until(pilot, lambda: "— your turn" in header(app), "joined")
            await say(pilot, "/invite bob reporter")
            changed = "heard alice: [task updated by alice: participants]"
            await until(pilot, lambda: changed in texts(app), "the change's turn")
            said = texts(app)
            assert said.count("/invite bob reporter") == 1, said  # as typed, once
            assert (await people())["bob"] == "reporter"
            await say(pilot, "/invite carol boss")
            assert texts(app)[-1].startswith("usage: /invite ID [ROLE]")
        # bob, a reporter, may not invite.
        other = chat(url, task_id=task_id, participant="bob")
        async with other.run_test() as pilot:
            await until(pilot, lambda: "— your turn" in header(other), "joined")
            await say(pilot, "/invite carol")
            await until(
                pilot, lambda: any("only an admin" in t for t in texts(other)), "the refusal"
            )
        assert "carol" not in await people()


@pytest.mark.processes
async def test_a_reply_cut_by_a_restart_is_marked_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(HERE))  # (chat_agents, for the server process)
    gate = tmp_path / "gate"
    with serve(tmp_path, "chat_agents:gated") as server:
        app = chat(server.url)
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.client is not None, "connected")
            await say(pilot, f"gate:{gate}")
            # (the harness holds a streamed reply's newest character back until more comes,
            # so its last chunk is never empty: "The reply" is what reached the chat)
            await until(pilot, lambda: "The reply" in texts(app), "the first words")
            assert server.process is not None
            server.process.kill()  # cut: no shutdown, no last chunk
            server.process.wait()
            gate.touch()
            server.start()
            await until(pilot, lambda: "The reply is whole." in texts(app), "the whole reply")
            await until(pilot, lambda: "— your turn" in header(app), "the turn's end")

            def views() -> list[Any]:
                return [v for v in lines(app) if v.line.kind == "reply"]

            cut = [v for v in views() if v.line.text.rstrip() == "The reply"]
            assert len(cut) == 1 and cut[0].line.interrupted and cut[0].has_class("interrupted")
            assert "[interrupted]" in str(cut[0].render())
            assert all(v.line.done for v in views())
            assert texts(app).count("The reply is whole.") == 1, texts(app)
            await say(pilot, "and again")
            await until(pilot, lambda: texts(app).count("The reply is whole.") == 2, "2nd reply")
            await until(pilot, lambda: "— your turn" in header(app), "the 2nd turn's end")
            assert all(v.line.done and "▍" not in str(v.render()) for v in views())
            assert [v.line.interrupted for v in views()].count(True) == 1


def test_each_answer_is_folded_into_its_own_reply() -> None:
    """Two turns that answered alike, read from a snapshot (joining, or after a break): each
    reply where its answer stands, no answer shown beside it."""

    def said(n: int, role: Role, text: str) -> Message:
        return Message(message_id=f"m{n}", role=role, parts=[Part(text=text)])

    history = [
        said(1, Role.USER, "a"),
        said(2, Role.AGENT, "ok"),
        said(3, Role.USER, "b"),
        said(4, Role.AGENT, "ok"),
    ]
    replies = [Artifact(artifact_id=f"r{n}", parts=[Part(text="ok")]) for n in (1, 2)]
    task = Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=TaskState.INPUT_REQUIRED),
        history=history,
        artifacts=replies,
    )
    shown = Shown(me="alice", agent="Planner")
    first = [(line.key, line.who) for line in shown.see_task(task)]
    assert first == [("m1", "user"), ("artifact:r1", "Planner"), ("m3", "user"),
                     ("artifact:r2", "Planner")]  # fmt: skip
    shown.see_task(task)  # the same snapshot again (a reconnection): nothing new
    assert list(shown.lines) == ["m1", "artifact:r1", "m3", "artifact:r2"]
    assert not any(line.interrupted or not line.done for line in shown.lines.values())
