"""What a task envelope may set, and how it is checked: the harness's own fields
(``parent_tasks``, ``sub_tasks``) are refused from every sender, naming the field; a brief's
plan, participants and texts follow the rules and bounds the harness's tools follow (one
validation: a cycle the ``create_plan`` tool refuses, a brief refuses too)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.harness.engine_kit import (
    ALICE,
    CAROL,
    envelope,
    extension,
    running,
    send,
)

from accord.core._caller import Caller
from accord.engine import Engine
from accord.harness import HarnessAgent, HarnessSettings, ModelResponse, ToolCall
from accord.harness._transcript import Conversation, ToolResult
from accord.harness.core import _plan as plans
from accord.harness.models import FunctionModel
from accord.store._memory import MemoryStore
from accord.wire import A2AError, ErrorKind
from accord.wire._model import ListTasksRequest, Part

FIELD = "message.parts[1].data.payload"


def brief(**payload: Any) -> list[Part]:
    return [
        Part(text="hello"),
        envelope({"kind": "task", "payload": {"name": "n", "goal": "g", **payload}}),
    ]


async def refusal(engine: Engine, caller: Caller, parts: list[Part], task_id: str = "") -> A2AError:
    with pytest.raises(A2AError) as refused:
        await send(engine, caller, parts, task_id)
    return refused.value


def steps(count: int, *, cycle: bool = False) -> dict[str, Any]:
    made = [
        {"id": f"s{n}", "name": f"step {n}", "depends_on": [f"s{n - 1}"] if n else []}
        for n in range(count)
    ]
    if cycle:
        made[0]["depends_on"] = [f"s{count - 1}"]
    return {"steps": made}


# --- the harness's own fields ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["parent_tasks", "sub_tasks"])
async def test_a_brief_cannot_set_the_harness_own_fields(name: str) -> None:
    async with running() as (engine, _):
        carols = await send(engine, CAROL, "carol's own plans")
        named = [{"task_id": carols.id}]
        error = await refusal(engine, ALICE, brief(**{name: named}))
        assert error.kind is ErrorKind.INVALID_PARAMS
        assert error.message.startswith(f"{FIELD}.{name}: set by the harness only")
        # … whether the task it names exists or not: the same answer.
        ghost = await refusal(engine, ALICE, brief(**{name: [{"task_id": "no-such-task"}]}))
        assert ghost.message == error.message
        # Nothing was made: alice has no task, carol's lists no sub-task.
        listed = await engine.list_tasks(_all(), ALICE)
        assert listed.tasks == []
        assert extension(await engine.get_task(carols.id, CAROL))["sub_tasks"] == []
        # Empty, as a client writing the whole extension sends them, they set nothing.
        task = await send(engine, ALICE, brief(parent_tasks=[], sub_tasks=[]))
        assert (extension(task)["parent_tasks"], extension(task)["sub_tasks"]) == ([], [])
        # A change cannot set them either.
        change = [envelope({"kind": "task", "payload": {name: named}})]
        changed = await refusal(engine, ALICE, change, task.id)
        assert changed.message == (
            f"message.parts[0].data.payload.{name}: a task envelope is set by the server only"
        )


async def test_not_even_a_trusted_delegator_briefs_a_parent() -> None:
    agent = HarnessAgent(
        HarnessSettings(model="main", delegators=("peer",)), {"main": FunctionModel(_echo)}
    )
    engine = Engine(MemoryStore(), agent)
    await engine.start()
    try:
        peer = Caller(participant="peer")
        # A delegator sets the server's fields …
        task = await send(engine, peer, brief(lifecycle="delegated"))
        assert extension(task)["lifecycle"] == "delegated"
        # … but not the harness's record of its sub-tasks.
        error = await refusal(engine, peer, brief(parent_tasks=[{"task_id": task.id}]))
        assert error.message.startswith(f"{FIELD}.parent_tasks: set by the harness only")
    finally:
        await engine.stop()


# --- the tools' rules, for briefs too ----------------------------------------------------------


async def test_a_briefed_plan_is_checked_as_create_plan_checks_one() -> None:
    async with running() as (engine, _):
        cyclic = await refusal(engine, ALICE, brief(plan=steps(3, cycle=True)))
        assert cyclic.kind is ErrorKind.INVALID_PARAMS
        assert cyclic.message == f"{FIELD}.plan: the plan has a cycle: s0 -> s2 -> s1 -> s0"
        huge = await refusal(engine, ALICE, brief(plan=steps(5000)))
        assert huge.message == f"{FIELD}.plan: a plan has at most {plans.MAX_STEPS} steps"
        missing = {"steps": [{"id": "a", "name": "a", "depends_on": ["zz"]}]}
        absent = await refusal(engine, ALICE, brief(plan=missing))
        assert absent.message == f"{FIELD}.plan: step 'a' depends on no step 'zz'"
        linked = {"steps": [{"id": "a", "name": "a", "linked_tasks": [{"task_id": "x"}]}]}
        refused = await refusal(engine, ALICE, brief(plan=linked))
        assert "no linked task" in refused.message
        # A plan within the rules is the task's.
        task = await send(engine, ALICE, brief(plan=steps(3)))
        assert [s["id"] for s in extension(task)["plan"]["steps"]] == ["s0", "s1", "s2"]


async def test_the_create_plan_tool_and_a_brief_refuse_the_same_plan() -> None:
    cycle = {"steps": [{"name": "a", "depends_on": ["b"]}, {"name": "b", "depends_on": ["a"]}]}
    answers = iter([ModelResponse("", (ToolCall("create_plan", cycle),)), ModelResponse("ok")])
    seen: list[Conversation] = []

    async def model(conversation: Conversation) -> ModelResponse:
        seen.append(conversation)
        return next(answers)

    async with running(model=model) as (engine, _):
        await send(engine, ALICE, "plan it")
        [result] = [s for s in seen[-1].steps if isinstance(s, ToolResult)]
        assert result.error
        briefed = {"steps": [{"id": "a", "name": "a", "depends_on": ["b"]},
                             {"id": "b", "name": "b", "depends_on": ["a"]}]}  # fmt: skip
        error = await refusal(engine, ALICE, brief(plan=briefed))
        assert result.content == "create_plan: the plan has a cycle: a -> b -> a"
        assert error.message == f"{FIELD}.plan: the plan has a cycle: a -> b -> a"


async def test_a_briefed_participant_list_has_the_bounds_of_a_task() -> None:
    async with running() as (engine, _):
        four_mb = "x" * (4 * 1024 * 1024)
        people = [{"id": "bob", "kind": "human", "role": "watcher", "display_name": four_mb}]
        error = await refusal(engine, ALICE, brief(participants=people))
        assert error.message == (
            f"{FIELD}.participants[0].display_name: must be at most 200 characters"
        )
        long_id = [{"id": "b" * 257, "kind": "human", "role": "watcher"}]
        error = await refusal(engine, ALICE, brief(participants=long_id))
        assert error.message == f"{FIELD}.participants[0].id: must be 1 to 256 printable characters"
        crowd = [{"id": f"p{n}", "kind": "human", "role": "watcher"} for n in range(300)]
        error = await refusal(engine, ALICE, brief(participants=crowd))
        assert error.message == f"{FIELD}.participants: must have at most 256 entries"


async def test_a_briefs_texts_have_the_bounds_of_a_sub_tasks_brief() -> None:
    async with running() as (engine, _):
        cases = {
            "name": ({"name": "n" * 201}, "name: must be at most 200 characters"),
            "goal": ({"goal": "  "}, "goal: must be 1 to 20000 characters (not blank)"),
            "description": (
                {"description": "d" * 20_001},
                "description: must be at most 20000 characters",
            ),
            "criteria": (
                {"acceptance_criteria": [{"text": "c"}] * 33},
                "acceptance_criteria: must have at most 32 entries",
            ),
            "type": ({"type": "t" * 201}, "type: must be at most 200 characters"),
        }  # fmt: skip
        for what, (fields, message) in cases.items():
            error = await refusal(engine, ALICE, brief(**fields))
            assert error.message == f"{FIELD}.{message}", what
        # A change is held to the same rules, on the fields it sets.
        task = await send(engine, ALICE, brief())
        rename = [envelope({"kind": "task", "payload": {"name": "n" * 201}})]
        error = await refusal(engine, ALICE, rename, task.id)
        assert error.message == "message.parts[0].data.payload.name: must be at most 200 characters"


def _all() -> ListTasksRequest:
    return ListTasksRequest()


async def _echo(conversation: Conversation) -> str:
    return conversation.text
