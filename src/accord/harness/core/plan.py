"""The plan a model makes of a task: steps with dependencies (a DAG), checked, and the moves
the intrinsic tools make on it. Pure: data in, a new plan or a refusal (:class:`PlanError`,
its message for the model) out."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

from accord.harness.wire import Plan, Step, TaskRef

MAX_STEPS = 50


class PlanError(ValueError):
    """The model asked for something the plan does not allow; the message says what."""


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "step"


def make(steps: Sequence[dict[str, Any]]) -> Plan:
    """A plan from ``create_plan``'s steps (``name``, ``description``, ``depends_on`` by
    name); refused when empty, too long, duplicated, cyclic or depending on a missing step."""
    if not steps:
        raise PlanError("a plan has at least one step")
    if len(steps) > MAX_STEPS:
        raise PlanError(f"a plan has at most {MAX_STEPS} steps")
    by_name: dict[str, str] = {}
    made: list[Step] = []
    for index, raw in enumerate(steps):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
            raise PlanError(f"step {index}: a step has a name")
        name = raw["name"]
        step_id = slug(name)
        if step_id in by_name.values():
            raise PlanError(f"two steps are named {name!r}")
        by_name[name] = step_id
        depends = raw.get("depends_on", [])
        if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
            raise PlanError(f"step {name!r}: depends_on is a list of step names")
        made.append(
            Step(
                id=step_id,
                name=name,
                description=str(raw.get("description", "")),
                depends_on=tuple(depends),
            )
        )
    resolved = []
    for step in made:
        missing = [d for d in step.depends_on if d not in by_name]
        if missing:
            raise PlanError(f"step {step.name!r} depends on no step named {missing[0]!r}")
        resolved.append(
            msgspec.structs.replace(step, depends_on=tuple(by_name[d] for d in step.depends_on))
        )
    plan = Plan(steps=tuple(resolved))
    _acyclic(plan)
    return plan


def complete(plan: Plan | None, name: str, output: str) -> Plan:
    """The plan with step ``name`` (its name or id) done, with its output; refused for a
    step that does not exist or whose dependencies are not done."""
    if plan is None:
        raise PlanError("there is no plan: make one with create_plan first")
    done = {s.id for s in plan.steps if s.state == "done"}
    for step in plan.steps:
        if name in (step.name, step.id):
            waiting = [d for d in step.depends_on if d not in done]
            if waiting:
                raise PlanError(f"step {step.name!r} waits for {', '.join(waiting)}")
            finished = msgspec.structs.replace(step, state="done", output=output)
            return Plan(steps=tuple(finished if s is step else s for s in plan.steps))
    raise PlanError(f"the plan has no step {name!r}")


def linked(plan: Plan | None, name: str, ref: TaskRef) -> Plan:
    """The plan with a sub-task linked to step ``name`` (its name or id)."""
    if plan is None:
        raise PlanError("there is no plan: make one with create_plan first")
    for step in plan.steps:
        if name in (step.name, step.id):
            tied = msgspec.structs.replace(step, linked_tasks=(*step.linked_tasks, ref))
            return Plan(steps=tuple(tied if s is step else s for s in plan.steps))
    raise PlanError(f"the plan has no step {name!r}")


def _acyclic(plan: Plan) -> None:
    by_id = {step.id: step for step in plan.steps}
    state: dict[str, int] = {}

    def visit(step_id: str, trail: tuple[str, ...]) -> None:
        if state.get(step_id) == 2:
            return
        if state.get(step_id) == 1:
            raise PlanError("the plan has a cycle: " + " -> ".join((*trail, step_id)))
        state[step_id] = 1
        for dependency in by_id[step_id].depends_on:
            visit(dependency, (*trail, step_id))
        state[step_id] = 2

    for step in plan.steps:
        visit(step.id, ())
