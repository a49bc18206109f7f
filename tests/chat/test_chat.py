"""``accord chat`` driven by Textual's own test driver (``App.run_test`` and its pilot)
against a running server: a conversation from the first message to its completion, the reply
streaming in, ``/`` completing the card's commands, a help request for you highlighted,
Ctrl+C asking before it cancels, joining a task, and resuming after the server restarts."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.dashboard.dashboard_agents import FIRST_TOKENS, LAST_TOKENS, conversation, streamer
from tests.dashboard.server_proc import serve
from textual.pilot import Pilot
from textual.widgets import Input, Static

from accord.agents import RequestContext, TaskHandle
from accord.app._build import build_app
from accord.app._settings import Settings
from accord.chat._app import ChatApp, Confirm, LineView
from accord.client import Client
from accord.harness._wire import CHANNEL_MEDIA_TYPE, STATUS_KEY
from accord.server._listen import bind
from accord.server._runner import serve as serve_app
from accord.wire._model import Part

ALICE = {"X-Participant-Id": "alice"}
PATIENCE_S = 20.0  # how long a condition may take to hold (a bound, not a measurement)


@asynccontextmanager
async def running(agent: Any) -> AsyncIterator[str]:
    """``agent`` served in process, its card naming the port it listens on (the client
    connects through the card)."""
    sockets = bind("127.0.0.1", 0, "HTTP")
    port = sockets[0].getsockname()[1]
    settings = dataclasses.replace(Settings(store="memory://", port=port), heartbeat_s=1.0)
    stop = asyncio.Event()
    bound: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    app = build_app(settings, agent)
    server = asyncio.ensure_future(
        serve_app(app, "127.0.0.1", port, stop=stop, sockets=sockets, on_listening=bound.set_result)
    )
    await bound
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop.set()
        await asyncio.wait_for(server, 10)


def chat(url: str, task_id: str = "", participant: str = "alice") -> ChatApp:
    headers = {"X-Participant-Id": participant} if participant else {}
    return ChatApp(
        lambda: Client.connect(url, headers=headers), task_id=task_id, participant=participant
    )


async def until(pilot: Pilot[Any], holds: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not holds():
        assert time.monotonic() < deadline, f"never saw: {what}"
        await pilot.pause(0.05)


def header(app: ChatApp) -> str:
    return str(app.query_one("#header", Static).render())


def lines(app: ChatApp) -> list[LineView]:
    return list(app.query(LineView))


def texts(app: ChatApp) -> list[str]:
    return [view.line.text for view in lines(app)]


async def say(pilot: Pilot[Any], text: str) -> None:
    field = pilot.app.query_one("#input", Input)
    field.value = text
    await pilot.press("enter")


async def test_a_conversation_from_first_message_to_completion() -> None:
    async with running(conversation) as url:
        app = chat(url)
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.client is not None, "connected")
            assert "new — say something to start" in header(app)
            await say(pilot, "let's plan the offsite")
            await until(pilot, lambda: "heard alice: let's plan the offsite" in texts(app), "reply")
            await until(pilot, lambda: "— your turn" in header(app), "your turn")
            assert "input-required · awaiting-next-message" in header(app)
            assert "let's plan the offsite" in texts(app)  # what alice said, once
            await say(pilot, "two days in June")
            await until(pilot, lambda: "heard alice: two days in June" in texts(app), "2nd reply")
            assert texts(app).count("two days in June") == 1
            await pilot.press("ctrl+d")
            await until(pilot, lambda: "completed — ended" in header(app), "completed")
            assert any("completed by alice" in t for t in texts(app))


async def test_what_people_write_is_shown_as_written_never_as_markup() -> None:
    async with running(conversation) as url:
        app = chat(url)
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.client is not None, "connected")
            await say(pilot, "[bold]not bold[/bold] [link=http://x]no link[/link] [/oops]")
            await until(pilot, lambda: "— your turn" in header(app), "the reply")
            shown = [str(view.render()) for view in lines(app)]
            assert "alice: [bold]not bold[/bold] [link=http://x]no link[/link] [/oops]" in shown
            said = "heard alice: [bold]not bold[/bold] [link=http://x]no link[/link] [/oops]"
            assert f"accord agent: {said}" in shown


async def test_the_reply_streams_in_as_it_is_written(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    async with running(streamer) as url:
        app = chat(url, participant="")
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.client is not None, "connected")
            await say(pilot, f"gate:{gate}")

            def reply() -> LineView | None:
                found = [v for v in lines(app) if v.line.key == "artifact:reply"]
                return found[0] if found else None

            await until(
                pilot,
                lambda: (view := reply()) is not None and view.line.text == "".join(FIRST_TOKENS),
                "the first tokens",
            )
            view = reply()
            assert view is not None and not view.line.done and view.has_class("streaming")
            assert "working — the agent's turn" in header(app)
            gate.touch()
            await until(pilot, lambda: view.line.done, "the last chunk")
            assert view.line.text == "".join(FIRST_TOKENS + LAST_TOKENS)
            assert not view.has_class("streaming")
            await until(pilot, lambda: "completed — ended" in header(app), "completed")


async def test_slash_completes_the_cards_commands() -> None:
    async with running(conversation) as url:
        app = chat(url)
        async with app.run_test() as pilot:
            await until(pilot, lambda: bool(app.commands), "the card's commands")
            field = app.query_one("#input", Input)
            field.focus()
            await pilot.press("/", "s", "u")
            hint = app.query_one("#hint", Static)
            await until(pilot, lambda: "/sub-task" in str(hint.render()), "the hint")
            assert "Start a linked sub-task" in str(hint.render())
            assert "/model" not in str(hint.render())
            await until(pilot, lambda: field._suggestion == "/sub-task ", "the suggestion")
            await pilot.press("right")  # accepts the suggestion
            assert field.value == "/sub-task "


async def test_ctrl_c_asks_before_it_cancels() -> None:
    async with running(conversation) as url:
        app = chat(url)
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.client is not None, "connected")
            await say(pilot, "hello")
            await until(pilot, lambda: "— your turn" in header(app), "your turn")
            await pilot.press("ctrl+c")
            await until(pilot, lambda: isinstance(app.screen, Confirm), "the question")
            await pilot.press("n")
            await pilot.pause(0.2)
            assert "input-required" in header(app)
            await pilot.press("ctrl+c")
            await until(pilot, lambda: isinstance(app.screen, Confirm), "the question again")
            await pilot.press("y")
            await until(pilot, lambda: "canceled — ended" in header(app), "canceled")


async def asker(ctx: RequestContext, task: TaskHandle) -> None:
    """Asks alice for help, addressed to her, and waits for the answer."""
    await task.start_working()
    help_request = {
        "channel_id": ctx.task_id,
        "sender": "planner",
        "kind": "help_request",
        "text": "which dates suit you?",
        "to": "alice",
    }
    await task.require_input(
        [Part(data=help_request, media_type=CHANNEL_MEDIA_TYPE)],
        metadata={STATUS_KEY: {"sub_state": "awaiting-answer"}},
    )


async def test_a_help_request_addressed_to_you_is_highlighted() -> None:
    async with running(asker) as url:
        for me, highlighted in (("alice", True), ("bob", False)):
            app = chat(url, participant=me)
            async with app.run_test() as pilot:
                await until(pilot, lambda app=app: app.client is not None, "connected")
                await say(pilot, "plan it")
                await until(
                    pilot,
                    lambda app=app: any(v.line.kind == "help" for v in lines(app)),
                    "the help request",
                )
                [view] = [v for v in lines(app) if v.line.kind == "help"]
                assert (
                    "[help request to alice from planner] which dates suit you?" in view.line.text
                )
                assert view.has_class("for-me") is highlighted
                expected = "your answer is awaited" if highlighted else "awaiting an answer"
                await until(pilot, lambda app=app, e=expected: e in header(app), expected)


async def test_joining_a_task_shows_what_was_said() -> None:
    async with running(conversation) as url:
        async with httpx.AsyncClient(base_url=url, headers={"A2A-Version": "1.0"}) as http:
            message = {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": "hi"}],
            }
            answer = await http.post("/message:send", json={"message": message}, headers=ALICE)
            task_id = answer.json()["task"]["id"]
        app = chat(url, task_id=task_id)
        async with app.run_test() as pilot:
            await until(pilot, lambda: "heard alice: hi" in texts(app), "the history")
            assert texts(app)[:2] == ["hi", "heard alice: hi"]
            # (the subscription replays the task's log: the header follows it to its end)
            await until(pilot, lambda: "— your turn" in header(app), "your turn")
            assert f"task {task_id}" in header(app)
        stranger = chat(url, task_id=task_id, participant="mallory")
        async with stranger.run_test() as pilot:
            await until(
                pilot, lambda: any("not found" in t for t in texts(stranger)), "the refusal"
            )


@pytest.mark.processes
async def test_the_stream_resumes_after_the_server_restarts(tmp_path: Path) -> None:
    with serve(tmp_path, "dashboard_agents:conversation") as server:
        app = chat(server.url)
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.client is not None, "connected")
            await say(pilot, "before the restart")
            await until(pilot, lambda: "heard alice: before the restart" in texts(app), "reply")
            server.stop()
            server.start()  # the same port and store
            async with httpx.AsyncClient(base_url=server.url) as http:
                message = {
                    "messageId": str(uuid.uuid4()),
                    "role": "ROLE_USER",
                    "parts": [{"text": "after the restart"}],
                    "taskId": app.conversation.task_id,
                }
                sent = await http.post(
                    "/message:send",
                    json={"message": message},
                    headers={"A2A-Version": "1.0", **ALICE},
                    timeout=30,
                )
                assert sent.status_code == 200, sent.text
            await until(pilot, lambda: "heard alice: after the restart" in texts(app), "resumed")
            said = texts(app)
            assert said.count("heard alice: before the restart") == 1, said
            assert said.count("after the restart") == 1, said


@pytest.mark.processes
def test_accord_chat_needs_a_terminal() -> None:
    """Run without one (a script, a pipe), it says so in one line instead of drawing."""
    accord = Path(sys.executable).with_name("accord")
    shown = subprocess.run(
        [str(accord), "chat", ":9", "--as", "alice"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert shown.returncode == 2
    assert shown.stderr.strip() == (
        "accord: chat needs a terminal (use accord send or stream in scripts)"
    )
    listed = subprocess.run([str(accord), "--help"], capture_output=True, text=True, check=True)
    assert "chat" in listed.stdout
