"""``accord chat`` shows each turn's work — its tool calls and the tokens its model calls
took — as one collapsed line under the message that started the turn, expanded by a click
or Ctrl+O, never as lines of their own; live and from the task's history alike; and a tool
call a hook redacted shows only the replacement. Driven by Textual's own driver against a
running server."""

from __future__ import annotations

from typing import Any

from tests.chat.test_chat import chat, header, running, say, texts, until
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


async def test_a_turns_tool_calls_and_tokens_are_one_collapsed_line_that_expands() -> None:
    async with running(shop()) as url:
        app = chat(url)
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.client is not None, "connected")
            await say(pilot, "hi")
            await until(pilot, lambda: "— your turn" in header(app), "the first turn")
            await say(pilot, ASK)
            await until(pilot, lambda: "— your turn" in header(app) and len(works(app)) == 2, "2nd")
            await until(pilot, lambda: "accord agent: Both shipped." in drawn(app), "the answer")
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
            await until(pilot, lambda: first.client is not None, "connected")
            await say(pilot, ASK)
            await until(pilot, lambda: "— your turn" in header(first), "the turn's end")
            await until(pilot, lambda: "accord agent: Both shipped." in drawn(first), "the answer")
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
            await until(pilot, lambda: app.client is not None, "connected")
            await say(pilot, "pay")
            await until(pilot, lambda: "accord agent: Paid." in drawn(app), "the answer")
            [view] = works(app)
            await pilot.press("ctrl+o")
            details = rendered(view.details)
            assert (
                'charge {"card":"[redacted]","amount":5} → charged 5 to card [redacted]' in details
            )
            assert SECRET not in details and all(SECRET not in text for text in drawn(app))
            assert texts(app) == ["pay", "Paid."]
