"""Visible work: every model call and tool call of a turn is a step event — a status update
whose message holds one ``application/vnd.accord.step+json`` data part — in the order it
happened, in the task's history; the model never reads one; tiny-harness's shapes still fit
every event; a ``tool.invoked`` hook's redaction is all anyone sees (stream, history, logs);
and a turn resumed from its journal marks what it replayed and sends nothing twice."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from tests.harness.engine_kit import ALICE, brief, send, sub_state
from tests.harness.test_usage import Priced
from tests.harness.tiny_harness_shapes import check_store
from tests.waiting import until

from accord.engine import Engine
from accord.harness import HarnessAgent, HarnessSettings, ToolCall
from accord.harness._step_events import OFF_ENV, STEP_MEDIA_TYPE, is_step, step_data
from accord.harness.hooks import FunctionExecutor
from accord.harness.models import FunctionModel, Usage
from accord.harness.tools import FunctionTool
from accord.store import SqliteStore, TaskStore
from accord.store._memory import MemoryStore
from accord.wire._codec import to_builtins
from accord.wire._model import Task, TaskState

SECRET = "4111-1111-1111-1111"


async def lookup(order_id: int) -> str:
    return f"order {order_id}: shipped"


async def explode(order_id: int) -> str:
    raise RuntimeError(f"warehouse down for {order_id}")


def agent_of(model: Priced, *tools: FunctionTool) -> HarnessAgent:
    agent = HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(model)})
    agent.extra_tools.extend(tools)
    return agent


def steps_of(task: Task) -> list[dict[str, Any]]:
    return [data for m in task.history if (data := step_data(m)) is not None]


async def log_of(store: TaskStore, task_id: str) -> list[Any]:
    """Everything the task's log holds that a client can be sent (no journal)."""
    events = await store.read_events(task_id, 0, 10_000)
    return [to_builtins(e.body) for e in events if e.kind != "journal"]


async def test_a_turns_model_and_tool_calls_are_step_events_in_its_history(
    tmp_path: Path,
) -> None:
    model = Priced(
        ("Hello.", Usage(3, 1, 0)),
        (
            [ToolCall("lookup", {"order_id": 7}), ToolCall("explode", {"order_id": 8})],
            Usage(100, 10, 40),
        ),
        ("Order 7 shipped; 8 is unknown.", Usage(50, 5, 0)),
        ("You're welcome.", Usage(1, 1, 0)),
    )
    store = SqliteStore(str(tmp_path / "tasks.db"))
    engine = Engine(store, agent_of(model, FunctionTool(lookup), FunctionTool(explode)))
    async with engine:
        task = await send(engine, ALICE, brief({"alice": "admin"}))
        task = await send(engine, ALICE, "where are orders 7 and 8?", task.id)
        assert sub_state(task) == "awaiting-next-message"
        steps = steps_of(task)
        kinds = [(s["kind"], s["step"], s.get("name")) for s in steps]
        # (a model call that answers without calling a tool is no event: the answer
        # carries its tokens)
        assert kinds == [
            ("model_call", 0, None),
            ("tool_call", 0, "lookup"),
            ("tool_call", 0, "explode"),
        ]
        asked, found, failed = steps
        assert asked["usage"] == {"input_tokens": 100, "output_tokens": 10, "cached_tokens": 40}
        assert [c["name"] for c in asked["tool_calls"]] == ["lookup", "explode"]
        assert found["arguments"] == {"order_id": 7}
        assert found["result"] == "order 7: shipped" and not found["error"]
        assert failed["error"] and "warehouse down for 8" in failed["result"]
        assert all(s["duration_ms"] >= 0 and not s["replayed"] for s in (found, failed))
        # Each is a status update of the WORKING turn with the data part and nothing else,
        # before the answer it led to.
        messages = [m for m in task.history if is_step(m)]
        assert all(len(m.parts) == 1 and m.parts[0].media_type == STEP_MEDIA_TYPE for m in messages)
        last = task.history.index(messages[-1])
        assert task.history[last + 1].text() == "Order 7 shipped; 8 is unknown."
        events = await store.read_events(task.id, 0, 1000)
        noted = [e.body for e in events if e.kind == "status" and e.body.status.message]
        states = {u.status.state for u in noted if is_step(u.status.message)}
        assert states == {TaskState.WORKING}
        task = await send(engine, ALICE, "thanks", task.id)
        assert model.asked == 4
        assert await check_store(store) >= 1  # tiny-harness's shapes fit every event


async def test_step_events_ride_in_the_commits_a_turn_makes_anyway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn's step events are written with its journal's writes: they cost it no commit (no
    fsync) of their own, and it never waits for one (docs/benchmarks.md, step events)."""

    def two_lookups() -> Priced:
        calls = [ToolCall("lookup", {"order_id": 1}), ToolCall("lookup", {"order_id": 2})]
        return Priced(
            ("Hello.", Usage(1, 1, 0)), (calls, Usage(1, 1, 0)), ("Both.", Usage(1, 1, 0))
        )

    commits: dict[str, int] = {}
    for events in ("0", "1"):
        monkeypatch.setenv(OFF_ENV, events)
        store = SqliteStore(str(tmp_path / f"tasks-{events}.db"))
        async with Engine(store, agent_of(two_lookups(), FunctionTool(lookup))) as engine:
            task = await send(engine, ALICE, brief({"alice": "admin"}))
            before = store.commit_stats.commits
            task = await send(engine, ALICE, "where are 1 and 2?", task.id)
            commits[events] = store.commit_stats.commits - before
        assert len(steps_of(task)) == (3 if events == "1" else 0)
    assert commits["1"] == commits["0"]


class Seen:
    """A model that records the entries it was shown."""

    def __init__(self, *answers: tuple[str | list[ToolCall], Usage]) -> None:
        self.priced = Priced(*answers)
        self.entries: list[list[tuple[str, str]]] = []

    async def __call__(self, conversation: Any) -> Any:
        self.entries.append([(e.role, e.text) for e in conversation.entries])
        return await self.priced(conversation)


async def test_the_model_never_reads_a_step_event() -> None:
    model = Seen(
        ("Hello.", Usage(1, 1, 0)),
        ([ToolCall("lookup", {"order_id": 7})], Usage(1, 1, 0)),
        ("Shipped.", Usage(1, 1, 0)),
        ("Bye.", Usage(1, 1, 0)),
    )
    agent = HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(model)})
    agent.extra_tools.append(FunctionTool(lookup))
    async with Engine(MemoryStore(), agent) as engine:
        task = await send(engine, ALICE, brief({"alice": "admin"}, "hi"))
        task = await send(engine, ALICE, "where is 7?", task.id)
        task = await send(engine, ALICE, "thanks", task.id)
    assert [role for role, _ in model.entries[-1]] == ["user", "agent", "user", "agent", "user"]
    assert all(text for _, text in model.entries[-1])


async def test_a_tool_invoked_hook_redacts_what_everyone_sees(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    charged: list[str] = []

    async def charge(card: str, amount: int) -> str:
        charged.append(card)
        return f"charged {amount} to card {card}"

    def redact(point: str, context: Any) -> Any:
        arguments = {**context.arguments, "card": "[redacted]"}
        content = context.content.replace(SECRET, "[redacted]")
        return context.__class__(**{**to_builtins(context), "arguments": arguments,
                                    "content": content})  # fmt: skip

    model = Priced(
        ("Hello.", Usage(1, 1, 0)),
        ([ToolCall("charge", {"card": SECRET, "amount": 5})], Usage(1, 1, 0)),
        ("Done.", Usage(1, 1, 0)),
    )
    agent = agent_of(model, FunctionTool(charge))
    agent.hooks.register(FunctionExecutor("redact", redact, points=["tool.invoked.post"]))
    store = MemoryStore()
    async with Engine(store, agent) as engine:
        task = await send(engine, ALICE, brief({"alice": "admin"}))
        task = await send(engine, ALICE, "pay", task.id)
        assert charged == [SECRET]  # the tool had the card
        [shown] = [s for s in steps_of(task) if s["kind"] == "tool_call"]
        assert shown["arguments"] == {"card": "[redacted]", "amount": 5}
        assert shown["result"] == "charged 5 to card [redacted]"
        assert SECRET not in json.dumps(to_builtins(task))
        assert SECRET not in json.dumps(await log_of(store, task.id))
    assert SECRET not in caplog.text


async def test_a_resumed_turn_marks_what_it_replayed_and_sends_nothing_twice(
    tmp_path: Path,
) -> None:
    started = asyncio.Event()

    async def slow(order_id: int) -> str:
        started.set()
        await asyncio.Event().wait()  # the stop cuts it
        return "never"

    async def quick(order_id: int) -> str:
        return f"order {order_id}: shipped"

    def priced() -> Priced:
        return Priced(
            ("Hello.", Usage(1, 1, 0)),
            (
                [ToolCall("quick", {"order_id": 1}), ToolCall("slow", {"order_id": 2})],
                Usage(20, 3, 0),
            ),
            ("Done.", Usage(9, 1, 0)),
        )

    path = str(tmp_path / "tasks.db")
    first = priced()
    engine = Engine(SqliteStore(path), agent_of(first, FunctionTool(quick), FunctionTool(slow)))
    await engine.start()
    task = await send(engine, ALICE, brief({"alice": "admin"}))
    turn = asyncio.ensure_future(send(engine, ALICE, "ship", task.id))
    await asyncio.wait_for(started.wait(), 5)
    await engine.stop()
    turn.cancel()

    again = priced()
    again.answers = again.answers[2:]
    engine = Engine(SqliteStore(path), agent_of(again, FunctionTool(quick), FunctionTool(slow)))
    await engine.start()
    try:

        async def parked() -> Task | None:
            found = await engine.store.get_task(task.id, None)
            state = found.task.status.state if found else None
            return found.task if state is TaskState.INPUT_REQUIRED else None

        done = await until(parked)
        steps = steps_of(done)
        ids = [m.message_id for m in done.history if is_step(m)]
        assert len(ids) == len(set(ids))  # nothing sent twice
        # (the cut run sent its model call and quick's result: not again, and slow's
        # result, sent once, says it was interrupted)
        calls = [(s["name"], s["replayed"]) for s in steps if s["kind"] == "tool_call"]
        assert calls == [("quick", False), ("slow", False)]
        assert "interrupted" in steps[-1]["result"] and steps[-1]["error"]
        models = [
            (s["step"], s["usage"]["input_tokens"]) for s in steps if s["kind"] == "model_call"
        ]
        assert models == [(0, 20)]
    finally:
        await engine.stop()
