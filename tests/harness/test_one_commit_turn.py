"""A participant's message continuing a parked conversation is stored with its turn's first
move (WORKING) on a store one process writes: one commit before the turn works, not two in
sequence; with ``message.received`` hooked, the hooks judge a message stored alone first, and
the hooks of the turn see it stored. A final answer's journal entry goes in the append that
ends the turn: a turn the model answers at once is one append; with ``turn.finished`` hooked,
the entry is durable before the hooks see the answer."""

from __future__ import annotations

from typing import Any

import pytest
from tests.engine.test_one_commit import Appends, working_in
from tests.harness.engine_kit import ALICE, running, said, send
from tests.waiting import until

from accord.core import JournalEntry
from accord.core._events import Event
from accord.harness import HarnessAgent
from accord.harness.hooks import FunctionExecutor
from accord.store._memory import MemoryStore
from accord.wire._model import Message, Task, TaskState, TaskStatusUpdateEvent


async def test_a_continued_turn_the_model_answers_at_once_is_one_append() -> None:
    store = MemoryStore()
    seen = Appends(store)
    async with running(store) as (engine, _):
        task = await send(engine, ALICE, "hello")
        await until(lambda: not engine.running(task.id), "the first turn's run to end")
        before = len(seen.appends)
        answered = await send(engine, ALICE, "and then?", task.id)
        assert "and then?" in said(answered)
        assert answered.status.state is TaskState.INPUT_REQUIRED
    message_id = answered.history[-2].message_id
    assert working_in(seen.holding(message_id))  # the message rides with WORKING
    [turn] = seen.appends[before:]  # and with all the rest: nothing waited for another commit
    assert kinds(turn) == ["message", "WORKING", "journal:model", "INPUT_REQUIRED"]


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


def kinds(events: list[Event]) -> list[str]:
    """What an append holds: messages, states, journal entries (by kind)."""
    found = []
    for event in events:
        body = event.body
        if isinstance(body, Message):
            found.append("message")
        elif isinstance(body, TaskStatusUpdateEvent | Task):
            found.append(body.status.state.name)
        elif isinstance(body, JournalEntry):
            found.append(f"journal:{body.data.get('kind')}")
    return found


async def test_with_turn_finished_hooked_the_answer_is_journaled_before_the_hooks_see_it() -> None:
    store = MemoryStore()
    journaled: list[list[str]] = []

    async def look(point: str, context: Any) -> None:
        events = await store.read_events(context.task_id, 0)
        journaled.append([e.body.data["text"] for e in events if isinstance(e.body, JournalEntry)])

    def hooked(agent: HarnessAgent) -> None:
        agent.hooks.register(FunctionExecutor("look", look, points=["turn.finished.pre"]))

    async with running(store, answer, setup=hooked) as (engine, _):
        task = await send(engine, ALICE, "hello")
        await until(lambda: not engine.running(task.id), "the first turn's run to end")
        await send(engine, ALICE, "and then?", task.id)
    assert journaled == [["said hello"], ["said hello", "said and then?"]]


async def answer(conversation: Any) -> str:
    return f"said {conversation.entries[-1].text}"
