"""A participant's message continuing a parked conversation is stored with its turn's first
move (WORKING) on a store one process writes: one commit before the turn works, not two in
sequence; with ``message.received`` hooked, the hooks judge a message stored alone first, and
the hooks of the turn see it stored."""

from __future__ import annotations

from typing import Any

import pytest
from tests.engine.test_one_commit import Appends, working_in
from tests.harness.engine_kit import ALICE, running, said, send
from tests.waiting import until

from accord.harness import HarnessAgent
from accord.harness.hooks import FunctionExecutor
from accord.store._memory import MemoryStore


async def test_a_continued_turn_stores_its_message_with_working() -> None:
    store = MemoryStore()
    seen = Appends(store)
    async with running(store) as (engine, _):
        task = await send(engine, ALICE, "hello")
        await until(lambda: not engine.running(task.id), "the first turn's run to end")
        answered = await send(engine, ALICE, "and then?", task.id)
        assert "and then?" in said(answered)
        message_id = answered.history[-2].message_id
        assert working_in(seen.holding(message_id))


def judged(agent: HarnessAgent) -> None:
    points = [f"message.received.{phase}" for phase in ("pre", "in", "post")]
    agent.hooks.register(FunctionExecutor("judge", lambda point, context: None, points=points))


async def test_message_received_hooks_judge_a_message_stored_alone_first() -> None:
    store = MemoryStore()
    seen = Appends(store)
    async with running(store, setup=judged) as (engine, _):
        task = await send(engine, ALICE, "hello")
        await until(lambda: not engine.running(task.id), "the first turn's run to end")
        answered = await send(engine, ALICE, "and then?", task.id)
        message_id = answered.history[-2].message_id
        assert not working_in(seen.holding(message_id))


@pytest.mark.parametrize("operation", ["turn.started", "llm.invoked"])
async def test_the_hooks_of_a_turn_see_its_message_stored(operation: str) -> None:
    store = MemoryStore()
    stored: list[list[str]] = []

    async def look(point: str, context: Any) -> None:
        record = await store.get_task(context.task_id, None)
        assert record is not None
        stored.append([m.text() for m in record.task.history])

    def hooked(agent: HarnessAgent) -> None:
        point = f"{operation}.pre"
        agent.hooks.register(FunctionExecutor("look", look, points=[point]))

    async with running(store, setup=hooked) as (engine, _):
        task = await send(engine, ALICE, "hello")
        await until(lambda: not engine.running(task.id), "the first turn's run to end")
        await send(engine, ALICE, "and then?", task.id)
    assert "and then?" in stored[-1]
