"""The shapes tiny-harness's clients read accord's task and status extensions with, as JSON
Schemas, and a checker of every event a task's log holds.

Written from the reference (docs: ../shared/reference/tiny-harness.md §2 "Task extension", §3.3)
and tiny-harness 0.9's own models of them (``TaskExtensionData`` and what it holds): its client
validates the task extension of every Task it receives with those models, and refuses the whole
extension (its task pane stops following) for one value outside them. The models are closed
where tiny-harness's are: the extension itself forbids unknown fields, each enum is closed
(participants' ``kind`` and ``role``, a step's ``state``, ``lifecycle``, ``reasoning_effort``, an
agent reference's ``kind``, and a task reference's ``sub_state``: ``awaiting-next-message`` or
``awaiting-answer``), and a plan is a DAG of unique step ids. The nested objects are closed here
too (stricter than tiny-harness, which ignores their unknown fields): accord writes none.

The status extension's ``sub_state`` is an open string (a reader treats an unknown one as plain
INPUT_REQUIRED), in an object with nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jsonschema

from accord.core import Event
from accord.store import TaskStore
from accord.wire import Task, TaskStatusUpdateEvent

TASK_KEY = "io.github.madarauchiha-314.tiny-harness/task"
STATUS_KEY = "io.github.madarauchiha-314.tiny-harness/status"

# tiny-harness's EntityKind: what an agent reference's ``kind`` may be.
ENTITY_KINDS = [
    "prompt",
    "skill",
    "tool",
    "llm",
    "system_one",
    "hook",
    "channel",
    "renderer",
    "surface",
    "store",
    "agent",
    "command",
    "speech_to_text",
    "text_to_speech",
    "image_generator",
    "media_store",
]
REF_SUB_STATES = ["awaiting-next-message", "awaiting-answer"]


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


_STRING = {"type": "string"}
_STRINGS = {"type": "array", "items": _STRING}

TASK_REF = {
    "type": "object",
    "additionalProperties": False,
    "required": ["task_id"],
    "properties": {
        "task_id": _STRING,
        "agent": _nullable(
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["kind", "id"],
                "properties": {
                    "kind": {"enum": ENTITY_KINDS},
                    "id": _STRING,
                    "version": _nullable(_STRING),
                },
            }
        ),
        "state": _nullable(_STRING),
        "sub_state": _nullable({"enum": REF_SUB_STATES}),
    },
}

TASK_EXTENSION: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tiny-harness TaskExtensionData (0.9)",
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "goal"],
    "properties": {
        "name": _STRING,
        "type": _nullable(_STRING),
        "goal": _STRING,
        "description": _STRING,
        "acceptance_criteria": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["text"],
                "properties": {"text": _STRING, "met": {"type": "boolean"}},
            },
        },
        "participants": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "kind", "role"],
                "properties": {
                    "id": _STRING,
                    "kind": {"enum": ["human", "agent"]},
                    "role": {"enum": ["assignee", "reporter", "watcher", "admin"]},
                    "display_name": _STRING,
                },
            },
        },
        "parent_tasks": {"type": "array", "items": TASK_REF},
        "sub_tasks": {"type": "array", "items": TASK_REF},
        "plan": _nullable(
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["steps"],
                "properties": {
                    "steps": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["id", "name"],
                            "properties": {
                                "id": _STRING,
                                "name": _STRING,
                                "description": _STRING,
                                "depends_on": _STRINGS,
                                "output": _nullable(_STRING),
                                "linked_tasks": {"type": "array", "items": TASK_REF},
                                "state": {"enum": ["pending", "active", "done", "failed"]},
                            },
                        },
                    }
                },
            }
        ),
        "lifecycle": _nullable({"enum": ["conversation", "delegated"]}),
        "model": _nullable(_STRING),
        "reasoning_effort": _nullable({"enum": ["low", "medium", "high"]}),
    },
}

STATUS_EXTENSION: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["sub_state"],
    "properties": {"sub_state": _STRING},
}

_TASK = jsonschema.Draft202012Validator(TASK_EXTENSION)
_STATUS = jsonschema.Draft202012Validator(STATUS_EXTENSION)


class ShapeError(AssertionError):
    """What accord emitted does not fit tiny-harness's shapes."""


def check_task_extension(data: Any, where: str = "") -> None:
    """``data`` as tiny-harness reads a task extension; ShapeError naming what does not fit."""
    errors = sorted(_TASK.iter_errors(data), key=lambda e: list(e.path))
    if errors:
        found = "; ".join(f"{'/'.join(map(str, e.path)) or '.'}: {e.message}" for e in errors)
        raise ShapeError(f"{where}: the task extension does not fit: {found}")
    plan = data.get("plan")
    if plan is not None:
        _check_dag(plan["steps"], where)


def check_status_extension(data: Any, where: str = "") -> None:
    errors = list(_STATUS.iter_errors(data))
    if errors:
        raise ShapeError(f"{where}: the status extension does not fit: {errors[0].message}")


def _check_dag(steps: list[dict[str, Any]], where: str) -> None:
    """tiny-harness's Plan validator: unique ids, dependencies on steps of the plan, no cycle."""
    ids = [step["id"] for step in steps]
    if len(ids) != len(set(ids)):
        raise ShapeError(f"{where}: the plan's step ids repeat: {ids}")
    by_id = {step["id"]: step for step in steps}
    for step in steps:
        for dependency in step.get("depends_on", []):
            if dependency not in by_id:
                raise ShapeError(f"{where}: step {step['id']!r} depends on {dependency!r}")
    state: dict[str, int] = {}

    def visit(step_id: str) -> None:
        if state.get(step_id) == 2:
            return
        if state.get(step_id) == 1:
            raise ShapeError(f"{where}: the plan has a cycle through {step_id!r}")
        state[step_id] = 1
        for dependency in by_id[step_id].get("depends_on", []):
            visit(dependency)
        state[step_id] = 2

    for step_id in ids:
        visit(step_id)


def check_metadata(metadata: Any, where: str) -> int:
    """The extensions in one metadata object (a Task's, a status update's); how many."""
    if not isinstance(metadata, dict):
        return 0
    found = 0
    if TASK_KEY in metadata:
        check_task_extension(metadata[TASK_KEY], where)
        found += 1
    if STATUS_KEY in metadata:
        check_status_extension(metadata[STATUS_KEY], where)
    return found


def check_events(events: Iterable[Event]) -> int:
    """Every task extension (and status extension) the events carry; how many extensions."""
    checked = 0
    for event in events:
        body = event.body
        where = f"task {event.task_id} event {event.seq} ({event.kind})"
        if isinstance(body, Task | TaskStatusUpdateEvent):
            checked += check_metadata(body.metadata, where)
    return checked


async def check_store(store: TaskStore) -> int:
    """Every event of every task ``store`` holds; how many task extensions were checked."""
    task_ids: list[str] = []
    after = 0
    while entries := await store.read_feed(after, None):
        for entry in entries:
            after = entry.position
            if entry.task_id not in task_ids:
                task_ids.append(entry.task_id)
    checked = 0
    for task_id in task_ids:
        seq = 0
        while events := await store.read_events(task_id, seq, 500):
            checked += check_events(events)
            seq = events[-1].seq
    return checked
