"""A task as one row of the dashboard's table, and the filters a row is matched against.

A row is what the table shows: state, the harness's sub-state, context, participants, the
harness's name for the task, the status message's text and the time of the last status
change. Everything in it is the agent's or a client's data: the page writes it as text,
never as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accord.core import TaskRecord
from accord.harness import STATUS_KEY, TASK_KEY
from accord.wire import UNSET, Message, Task, TaskState, format_timestamp

SUMMARY_CHARS = 200  # of the status message's text in a row
# The state filter takes the short names the page and the CLI use (working, input-required).
STATES: dict[str, TaskState] = {
    state.name.lower().replace("_", "-"): state
    for state in TaskState
    if state is not TaskState.UNSPECIFIED
}


def state_name(state: object) -> str:
    return state.name.lower().replace("_", "-") if isinstance(state, TaskState) else str(state)


def _metadata(task: Task, key: str) -> dict[str, Any]:
    metadata = task.metadata
    if metadata is UNSET:
        return {}
    value = metadata.get(key)
    return value if isinstance(value, dict) else {}


def sub_state(task: Task) -> str:
    """The harness's status extension: why an INPUT_REQUIRED task waits ("" when none)."""
    value = _metadata(task, STATUS_KEY).get("sub_state")
    return value if isinstance(value, str) else ""


def harness_task(task: Task) -> dict[str, Any]:
    """The harness's task extension (name, goal, participants …); {} for other tasks."""
    return _metadata(task, TASK_KEY)


def participants(task: Task) -> list[dict[str, str]]:
    """``{id, role, kind}`` of each participant the harness lists (free-form data: only
    string fields are kept)."""
    found = harness_task(task).get("participants")
    if not isinstance(found, list):
        return []
    rows: list[dict[str, str]] = []
    for entry in found:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            rows.append(
                {
                    key: entry[key]
                    for key in ("id", "role", "kind", "display_name")
                    if isinstance(entry.get(key), str)
                }
            )
    return rows


def _text(message: Message | Any) -> str:
    return message.text() if isinstance(message, Message) else ""


def row(record: TaskRecord) -> dict[str, Any]:
    task = record.task
    extension = harness_task(task)
    name = extension.get("name")
    return {
        "id": task.id,
        "contextId": task.context_id,
        "state": state_name(task.status.state),
        "subState": sub_state(task),
        "participants": participants(task),
        "name": name if isinstance(name, str) else "",
        "summary": _text(task.status.message)[:SUMMARY_CHARS],
        "updated": format_timestamp(record.updated_ms),
        "updatedMs": record.updated_ms,
    }


@dataclass(frozen=True, slots=True)
class Filters:
    """What the table is narrowed to: a state, a context (both answered by the store's
    indexes) and a text, matched case-insensitively against the task's id, context id,
    harness name and goal, participant ids, status message and history messages."""

    state: TaskState | None = None
    context_id: str = ""
    text: str = ""

    def matches(self, record: TaskRecord) -> bool:
        task = record.task
        if self.state is not None and record.state is not self.state:
            return False
        if self.context_id and task.context_id != self.context_id:
            return False
        return not self.text or self.matches_text(task)

    def matches_text(self, task: Task) -> bool:
        needle = self.text.casefold()
        return any(needle in haystack.casefold() for haystack in _haystacks(task))


def _haystacks(task: Task) -> Any:
    yield task.id
    yield task.context_id
    extension = harness_task(task)
    for key in ("name", "goal"):
        value = extension.get(key)
        if isinstance(value, str):
            yield value
    for participant in participants(task):
        yield participant["id"]
    yield _text(task.status.message)
    for message in task.history:
        yield message.text()
