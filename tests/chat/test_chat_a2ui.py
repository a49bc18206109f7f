"""A2UI surfaces in ``accord chat``, driven by Textual's own test driver against a harness
served in process whose model calls ``emit_ui``: the form is drawn as text (its heading, the
choice's numbered options, the note field, the button), ``/ui N VALUE`` fills it, ``/ui N``
presses the button and the action reaches the model, which answers; a model's escape
sequences and markup never reach the terminal as such."""

from __future__ import annotations

from typing import Any

from tests.chat.test_chat import chat, header, running, say, texts, until
from tests.harness import a2ui_kit as kit

from accord.harness import Conversation, HarnessAgent, HarnessSettings, ModelResponse, ToolCall
from accord.harness.models import FunctionModel


def agent(asked: list[Conversation]) -> HarnessAgent:
    messages = kit.form()
    components = messages[1]["updateComponents"]["components"]
    components[1]["children"].append("trap")
    components.append({"id": "trap", "component": "Text", "text": "\x1b[2J[bold]x[/bold]"})
    answers: list[Any] = [[ToolCall("emit_ui", {"messages": messages})], "Please choose."]

    async def model(conversation: Conversation) -> str | ModelResponse:
        asked.append(conversation)
        answer = answers.pop(0) if answers else "A replacement is on its way."
        return answer if isinstance(answer, str) else ModelResponse("", tuple(answer))

    return HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(model)})


async def test_a_surface_is_a_form_filled_and_pressed_from_the_terminal() -> None:
    asked: list[Conversation] = []
    async with running(agent(asked)) as url:
        app = chat(url)
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.client is not None, "connected")
            await say(pilot, "my blender is cracked")
            await until(pilot, lambda: "Please choose." in texts(app), "the question")
            [form] = [t for t in texts(app) if t.startswith("┌ refund-form")]
            assert form.splitlines() == [
                "┌ refund-form",
                "│ ORDER #48213: HOW SHALL WE FIX IT?",
                "│ [1] Remedy: (•) 1 Refund  ( ) 2 Replacement",
                "│ [2] Note: ___",
                "│ [3] <Confirm>",
                "│ ?[2J[bold]x[/bold]",
                "└ /ui N VALUE fills control N, /ui N presses button N",
            ]
            await say(pilot, "/ui 1 2")
            await until(pilot, lambda: any("(•) 2 Replacement" in t for t in texts(app)), "chosen")
            await say(pilot, "/ui 2 before Friday")
            await until(
                pilot, lambda: any("[2] Note: before Friday" in t for t in texts(app)), "set"
            )
            await say(pilot, "/ui 9")
            await until(pilot, lambda: "no control 9 (the forms number 1 to 3)" in texts(app), "9")
            await say(pilot, "/ui 3")
            await until(pilot, lambda: "A replacement is on its way." in texts(app), "the answer")
            assert "[ui action confirm on refund-form]" in texts(app)
            assert "your turn" in header(app)
            seen = asked[-1].entries[-1].text
            assert seen.startswith("[ui action from alice] {")
            assert '"context": {"note": "before Friday", "remedy": ["replace"]}' in seen
