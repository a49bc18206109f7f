"""``accord chat`` shows each turn's work — its tool calls and the tokens its model calls
took — as one collapsed line under the message that started the turn, expanded by a click
or Ctrl+O, never as lines of their own; live and from the task's history alike; and a tool
call a hook redacted shows only the replacement. Driven by Textual's own driver against a
running server."""

from __future__ import annotations

from typing import Any

from tests.chat.test_chat import chat, header, running, say, texts, until
from textual.pilot import Pilot
from textual.widget import Widget

from accord.chat._app import ChatApp, WorkView
from accord.harness import HarnessAgent, HarnessSettings, ModelResponse, ToolCall
from accord.harness.hooks import FunctionExecutor
from accord.harness.models import FunctionModel, Usage
from accord.harness.tools import FunctionTool
from accord.wire._codec import to_builtins

SECRET = "4111-1111-1111-1111"
ASK = "where are orders 7 and 8?"


class Scripted:
    """A model that plays, for each message, its answers in order."""

    def __init__(self, **turns: list[ModelResponse]) -> None:
        self.turns = {text.replace("_", " "): answers for text, answers in turns.items()}

    async def __call__(self, conversation: Any) -> ModelResponse:
        return self.turns[conversation.text].pop(0)


async def lookup(order_id: int) -> str:
    return f"order {order_id}: shipped"


async def charge(card: str, amount: int) -> str:
    return f"charged {amount} to card {card}"


def redact(point: str, context: Any) -> Any:
    """A ``tool.invoked.post`` hook: the card never leaves the tool."""
    if "card" not in context.arguments:
        return None
    shown = {**to_builtins(context), "arguments": {**context.arguments, "card": "[redacted]"}}
    shown["content"] = context.content.replace(SECRET, "[redacted]")
    return context.__class__(**shown)


def shop() -> HarnessAgent:
    two_lookups = ModelResponse(
        "",
        (ToolCall("lookup", {"order_id": 7}), ToolCall("lookup", {"order_id": 8})),
        usage=Usage(1200, 40, 0),
    )
    model = Scripted(
        hi=[ModelResponse("Hello.", usage=Usage(3, 1, 0))],
        **{
            ASK.replace(" ", "_"): [
                two_lookups,
                ModelResponse("Both shipped.", usage=Usage(34, 16, 0)),
            ]
        },
        pay=[
            ModelResponse(
                "", (ToolCall("charge", {"card": SECRET, "amount": 5}),), usage=Usage(9, 2, 0)
            ),
            ModelResponse("Paid.", usage=Usage(1, 1, 0)),
        ],
    )
    agent = HarnessAgent(
        HarnessSettings(agent_id="shop", model="main"), {"main": FunctionModel(model)}
    )
    agent.extra_tools.extend([FunctionTool(lookup), FunctionTool(charge)])
    agent.hooks.register(FunctionExecutor("redact", redact, points=["tool.invoked.post"]))
    return agent


def works(app: ChatApp) -> list[WorkView]:
    return list(app.query(WorkView))


def rendered(widget: Widget) -> str:
    return str(widget.render())


def drawn(app: ChatApp) -> list[str]:
    """The log's lines as drawn, in order: a work line by its summary."""
    log = app.query_one("#log")
    return [
        rendered(child.summary) if isinstance(child, WorkView) else rendered(child)
        for child in log.children
    ]


async def turn(app: ChatApp, pilot: Pilot[Any], text: str, answer: str) -> None:
    """Say ``text`` and wait for the turn to end with ``answer``."""
    await until(pilot, lambda: app.client is not None, "connected")
    await say(pilot, text)
    await until(
        pilot,
        lambda: f"accord agent: {answer}" in drawn(app) and "— your turn" in header(app),
        f"the answer {answer!r}",
    )


async def test_a_turns_tool_calls_and_tokens_are_one_collapsed_line_that_expands() -> None:
    async with running(shop()) as url:
        app = chat(url)
        async with app.run_test() as pilot:
            await turn(app, pilot, "hi", "Hello.")
            await turn(app, pilot, ASK, "Both shipped.")
            summary = "▸ 2 tool calls · 1,234 tokens in / 56 out"
            # Under the message that started the turn, above its answer; no step of its own.
            assert drawn(app) == [
                "alice: hi",
                "▸ no tool calls · 3 tokens in / 1 out",
                "accord agent: Hello.",
                f"alice: {ASK}",
                summary,
                "accord agent: Both shipped.",
            ]
            assert not any("lookup" in text or "⚙" in text for text in texts(app))
            view = works(app)[-1]
            assert not view.details.display and not view.expanded  # the details hidden

            await pilot.click(view)  # a click expands it
            assert view.details.display
            assert rendered(view.summary) == summary.replace("▸", "▾")
            details = rendered(view.details)
            assert 'lookup {"order_id":7} → order 7: shipped' in details
            assert 'lookup {"order_id":8} → order 8: shipped' in details
            assert "model call main → lookup, lookup · 1,200 tokens in / 40 out" in details
            assert "model call → answer · 34 tokens in / 16 out" in details
            assert " ms" in details  # how long each took

            await pilot.press("ctrl+o")  # and Ctrl+O folds the newest again
            assert not view.details.display


async def test_a_turn_read_from_history_groups_its_work_the_same_way() -> None:
    async with running(shop()) as url:
        first = chat(url)
        async with first.run_test() as pilot:
            await turn(first, pilot, ASK, "Both shipped.")
            live = drawn(first)
            task_id = first.conversation.task_id
        joined = chat(url, task_id=task_id)  # joining: the turn comes from GetTask's history
        async with joined.run_test() as pilot:
            await until(
                pilot, lambda: "accord agent: Both shipped." in drawn(joined), "the history"
            )
            assert (
                drawn(joined)
                == live
                == [
                    f"alice: {ASK}",
                    "▸ 2 tool calls · 1,234 tokens in / 56 out",
                    "accord agent: Both shipped.",
                ]
            )
            await pilot.press("shift+tab", "enter")  # (focused from the input, Enter expands)
            assert 'lookup {"order_id":8} → order 8: shipped' in rendered(works(joined)[0].details)


async def test_a_redacted_tool_call_shows_only_the_replacement() -> None:
    async with running(shop()) as url:
        app = chat(url)
        async with app.run_test() as pilot:
            await turn(app, pilot, "pay", "Paid.")
            [view] = works(app)
            await pilot.press("ctrl+o")
            details = rendered(view.details)
            assert (
                'charge {"card":"[redacted]","amount":5} → charged 5 to card [redacted]' in details
            )
            assert SECRET not in details and all(SECRET not in text for text in drawn(app))
            assert texts(app) == ["pay", "Paid."]


def test_what_a_server_sends_for_a_step_is_checked_and_bounded() -> None:
    """Step events are network input: a long argument or result is cut, fields of the wrong
    type show as unknown, and nothing of it is read as a separate line."""
    from accord.chat._conversation import Conversation
    from accord.harness import STEP_MEDIA_TYPE
    from accord.wire import Message, Part, Role, Task, TaskState, TaskStatus

    def step(n: int, data: dict[str, Any]) -> Message:
        part = Part(data={"turn": "m1", "step": 0, **data}, media_type=STEP_MEDIA_TYPE)
        return Message(message_id=f"s{n}", role=Role.AGENT, parts=[part])

    history = [
        Message(message_id="m1", role=Role.USER, parts=[Part(text="go")]),
        step(1, {"kind": "model_call", "usage": {"input_tokens": "many"}, "tool_calls": "x"}),
        step(
            2,
            {
                "kind": "tool_call",
                "name": 7,
                "arguments": {"q": "a" * 10_000},
                "result": "b" * 10_000,
                "error": "yes",
                "duration_ms": "slow",
            },
        ),
    ]
    task = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.WORKING), history=history)
    shown = Conversation(me="alice")
    shown.see_task(task)
    assert list(shown.lines) == ["m1", "work:m1"]
    work = shown.lines["work:m1"].work
    assert work is not None
    assert work.summary() == "▸ 1 tool call"  # (no tokens said: none shown)
    model, tool = work.details().split("\n")
    assert model == "model call → tools · tokens not said"
    assert tool.startswith("  ⚙ ? {") and "→" in tool and len(tool) < 600
