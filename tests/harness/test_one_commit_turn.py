"""A participant's message continuing a parked conversation is stored with its turn's first
move (WORKING) on a store one process writes: one commit before the turn works, not two in
sequence; with ``message.received`` hooked, the hooks judge a message stored alone first."""

from __future__ import annotations

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
