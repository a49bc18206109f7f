"""The plan a model makes of a task: steps with dependencies (a DAG), checked, and the moves
the intrinsic tools make on it. Pure: data in, a new plan or a refusal (:class:`PlanError`,
its message for the model) out."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

from accord.errors import AccordError
from accord.harness._wire import Plan, Step, TaskRef
from accord.harness.core._bounds import MAX_NAME, MAX_STEPS, MAX_TEXT


class PlanError(AccordError, ValueError):
    """The model asked for something the plan does not allow; the message says what."""


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "step"


def make(steps: Sequence[dict[str, Any]]) -> Plan:
    """A plan from ``create_plan``'s steps (``name``, ``description``, ``depends_on`` by
    name), every step pending; refused when a step has no name, two share one, or one
    depends on a step the plan lacks, and as :func:`check` refuses."""
    if not isinstance(steps, list) or not steps:
        raise PlanError("a plan has at least one step")
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
        description = raw.get("description") or ""
        if not isinstance(description, str):
            raise PlanError(f"step {name!r}: description is text")
        made.append(Step(id=step_id, name=name, description=description, depends_on=tuple(depends)))
    resolved = []
    for step in made:
        missing = [d for d in step.depends_on if d not in by_name]
        if missing:
            raise PlanError(f"step {step.name!r} depends on no step named {missing[0]!r}")
        resolved.append(
            msgspec.structs.replace(step, depends_on=tuple(by_name[d] for d in step.depends_on))
        )
    plan = Plan(steps=tuple(resolved))
    check(plan)
    return plan


def check(plan: Plan) -> None:
    """A new plan, as ``create_plan`` makes one and a task envelope may bring one: 1 to
    :data:`MAX_STEPS` steps, each with a unique id and name (at most ``MAX_NAME``
    characters) and a description of at most ``MAX_TEXT``, depending only on steps of the
    plan, without a cycle; every step pending, with no output and no linked task yet
    (``complete_step`` and the sub-tasks made for a step set those)."""
    steps = plan.steps
    if not steps:
        raise PlanError("a plan has at least one step")
    if len(steps) > MAX_STEPS:
        raise PlanError(f"a plan has at most {MAX_STEPS} steps")
    ids: set[str] = set()
    names: set[str] = set()
    for index, step in enumerate(steps):
        where = f"step {index}"
        for value, what in ((step.id, "id"), (step.name, "name")):
            if not value.strip() or len(value) > MAX_NAME:
                raise PlanError(f"{where}: its {what} is 1 to {MAX_NAME} characters")
        if step.id in ids or step.name in names:
            raise PlanError(f"{where}: two steps are named {step.name!r} (or share an id)")
        ids.add(step.id)
        names.add(step.name)
        if len(step.description) > MAX_TEXT:
            raise PlanError(f"{where}: its description is at most {MAX_TEXT} characters")
        if step.state != "pending" or step.output is not None or step.linked_tasks:
            raise PlanError(
                f"{where}: a new plan's steps are pending, with no output and no linked task"
            )
    for step in steps:
        if len(step.depends_on) > len(steps):
            raise PlanError(f"step {step.id!r} depends on more steps than the plan has")
        missing = [d for d in step.depends_on if d not in ids]
        if missing:
            raise PlanError(f"step {step.id!r} depends on no step {missing[0]!r}")
    _acyclic(plan)


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
