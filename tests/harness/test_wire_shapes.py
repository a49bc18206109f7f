"""Every task extension the harness emits fits the shapes tiny-harness's clients read it with
(tests/harness/tiny_harness_shapes.py): each event of every task's log — task snapshots and
status updates, with their status extension — through the harness's scenarios: a
conversation with its commands, envelopes and completion, a plan with a step's sub-task,
sub-tasks of every kind on this harness (one of them waiting for its own sub-task), channels
and help requests, and a cancel's cascade. Sub-tasks on another agent: test_remote_shapes.py.

A reference in ``sub_tasks`` carries only the sub-states tiny-harness knows
(``awaiting-next-message``, ``awaiting-answer``); a child waiting for its own sub-tasks is
``awaiting-subtasks`` in its own status, and INPUT_REQUIRED without a sub-state in its
parent's reference."""

from __future__ import annotations

from typing import Any

import pytest
from tests.harness.channel_kit import channel
from tests.harness.delegation_kit import Scripts, delegating, read, spawn
from tests.harness.engine_kit import ALICE, BOB, CAROL, CONTROL, brief, envelope, said, send
from tests.harness.engine_kit import extension as extension_of
from tests.harness.engine_kit import sub_state as sub_state_of
from tests.harness.tiny_harness_shapes import ShapeError, check_store, check_task_extension
from tests.waiting import until

from accord.harness import ToolCall
from accord.wire._model import TaskState


def for_participant(participant: str, name: str, goal: str) -> ToolCall:
    arguments = {"participant_id": participant, "name": name, "goal": goal}
    return ToolCall("create_task_for_participant", arguments)


def ask(participant: str, question: str) -> ToolCall:
    return ToolCall("ask_participant", {"participant_id": participant, "question": question})


def refs(task: Any) -> list[tuple[str, str | None, str | None]]:
    return [(r["task_id"], r["state"], r["sub_state"]) for r in extension_of(task)["sub_tasks"]]


async def state_is(engine: Any, task_id: str, state: TaskState, sub: str | None = None) -> Any:
    async def check() -> Any:
        task = await read(engine, task_id)
        if task.status.state is state and (sub is None or sub_state_of(task) == sub):
            return task
        return None

    return await until(check, f"{task_id} in {state.name} {sub or ''}")


def test_the_checker_refuses_what_tiny_harness_refuses() -> None:
    good = {"name": "n", "goal": "g", "sub_tasks": [{"task_id": "t.1", "sub_state": None}]}
    check_task_extension(good)
    for bad in (
        {**good, "sub_tasks": [{"task_id": "t.1", "sub_state": "awaiting-subtasks"}]},
        {**good, "channels": []},
        {**good, "participants": [{"id": "a", "kind": "robot", "role": "reporter"}]},
        {**good, "lifecycle": "forever"},
        {**good, "plan": {"steps": [{"id": "a", "name": "a", "depends_on": ["b"]}]}},
        {**good, "plan": {"steps": [{"id": "a", "name": "a", "depends_on": ["a"]}]}},
    ):
        with pytest.raises(ShapeError):
            check_task_extension(bad)


async def test_a_conversation_commands_envelopes_and_completion() -> None:
    model = Scripts(root=["Hello.", "Noted.", "Done."])
    async with delegating(model, models=("other",)) as (engine, agent):
        agent._models["other"] = agent._models["main"]
        task = await send(engine, ALICE, brief({"bob": "watcher", "carol": "admin"}, "hi"))
        await send(engine, ALICE, "two days in June", task.id)
        for command in ("/model other", "/effort high", "/status", "/help"):
            await send(engine, ALICE, command, task.id)
        side = await send(engine, ALICE, "/sub-task book the venue", task.id)
        side_id = side.status.message.metadata["task_ref"]  # type: ignore[union-attr]
        change = {"name": "the offsite", "description": "40 people"}
        await send(engine, BOB, [envelope({"kind": "task", "payload": change})], task.id)
        people = [
            {"id": "alice", "kind": "human", "role": "reporter"},
            {"id": "bob", "kind": "human", "role": "reporter"},
            {"id": "carol", "kind": "human", "role": "admin"},
            {"id": "accord", "kind": "agent", "role": "assignee"},
        ]
        roles = envelope({"kind": "task", "payload": {"participants": people}})
        await send(engine, CAROL, [roles], task.id)
        refused = await send(engine, ALICE, [CONTROL], task.id)
        assert said(refused).startswith("completion refused")
        await send(engine, ALICE, [CONTROL], side_id)
        done = await send(engine, BOB, [CONTROL], task.id)
        assert done.status.state is TaskState.COMPLETED
        assert await check_store(engine.store) >= 5


async def test_a_plan_and_a_steps_sub_task() -> None:
    plan = ToolCall(
        "create_plan",
        {"steps": [{"name": "find a venue"}, {"name": "book it", "depends_on": ["find a venue"]}]},
    )
    done = ToolCall("complete_step", {"step": "find a venue", "output": "Halle"})
    model = Scripts(
        root=[[plan, spawn("venues", "find venues", step="find a venue")], "On it.", [done], "ok"],
        c1=["Halle, Dock"],
    )
    async with delegating(model) as (engine, _):
        task = await send(engine, ALICE, brief({}, "go"))
        await until(lambda: _said(engine, task.id, "ok"), "the plan's step done")
        finished = await read(engine, task.id)
        [first, _] = extension_of(finished)["plan"]["steps"]
        assert first["state"] == "done" and first["linked_tasks"][0]["state"] == "COMPLETED"
        assert await check_store(engine.store) >= 5


async def _said(engine: Any, task_id: str, text: str) -> bool:
    return said(await read(engine, task_id)) == text


async def test_a_child_waiting_for_its_own_sub_task_is_no_sub_state_in_its_parents_reference() -> (
    None
):
    model = Scripts(
        root=[[spawn("quote", "get a quote")], "Asked.", "Got it."],
        c1=[[for_participant("bob", "price", "your price")], "Bob is on it.", "4,200 EUR"],
    )
    async with delegating(model) as (engine, _):
        root = await send(engine, ALICE, brief({"bob": "reporter"}, "go"))
        child_id, grandchild_id = f"{root.id}.1", f"{root.id}.1.1"
        # The child waits for bob's task: awaiting-subtasks, in its own status …
        await state_is(engine, child_id, TaskState.INPUT_REQUIRED, "awaiting-subtasks")

        async def reference() -> Any:
            found = refs(await read(engine, root.id))
            return found if found == [(child_id, "INPUT_REQUIRED", None)] else None

        # … and INPUT_REQUIRED without a sub-state in its parent's reference (tiny-harness's
        # clients know no awaiting-subtasks there).
        await until(reference, "the parent's reference to its waiting child")
        status = await send(engine, ALICE, "/status", root.id)
        assert f"- {child_id} · this agent · INPUT_REQUIRED · awaiting-subtasks" in said(status)
        await send(engine, BOB, "4,200 EUR", grandchild_id)
        await until(lambda: _said(engine, root.id, "Got it."), "the root's turn on its result")
        assert await check_store(engine.store) >= 5


async def test_participants_and_conversation_children_and_a_cancel_cascade() -> None:
    model = Scripts(
        root=[[spawn("slow", "wait"), for_participant("bob", "q", "a quote")], "Two."],
        c1=[[ask("bob", "Which?")]],
    )
    async with delegating(model) as (engine, _):
        parent = await send(engine, ALICE, brief({"bob": "reporter"}, "go"))
        await send(engine, ALICE, "/sub-task a side chat", parent.id)
        await state_is(engine, f"{parent.id}.1", TaskState.INPUT_REQUIRED, "awaiting-answer")
        await until(lambda: _relayed(engine, parent.id), "the child's question relayed")
        canceled = await engine.cancel_task(parent.id, ALICE)
        assert {state for _, state, _ in refs(canceled)} == {"CANCELED"}
        for n in (1, 2, 3):
            await state_is(engine, f"{parent.id}.{n}", TaskState.CANCELED)
        assert await check_store(engine.store) >= 5


async def _relayed(engine: Any, task_id: str) -> bool:
    return sub_state_of(await read(engine, task_id)) == "awaiting-answer"


async def test_channels_and_help_requests() -> None:
    model = Scripts(root=[[ask("bob", "Which venue?")], "Channels noted.", "Venue A it is."])
    async with delegating(model) as (engine, _):
        task = await send(engine, ALICE, brief({"bob": "reporter", "carol": "admin"}, "go"))
        assert sub_state_of(task) == "awaiting-answer"
        ops = {"channels": [{"channel_id": "ops", "members": ["alice", "carol", "accord"]}]}
        await send(engine, CAROL, [envelope({"kind": "task", "payload": ops})], task.id)
        await send(engine, ALICE, [channel(channel_id="ops", sender="alice", text="hi")], task.id)
        answered = await send(engine, BOB, "A", task.id)
        assert answered.status.state is TaskState.INPUT_REQUIRED
        await until(lambda: _said(engine, task.id, "Venue A it is."), "the answer's turn")
        assert await check_store(engine.store) >= 3
