"""A model call that failed after its adapter's retries ends the turn, never the
conversation: the words that tell the participants, and the task's move.

A conversation parks (INPUT_REQUIRED, ``awaiting-next-message``) with a status message that
says in one line what failed and what to do, and the kind of failure (``reason``) and the
model in the status extension's value; a delegated task fails with the same message (its
parent reads it). The status message is marked (:data:`MODEL_FAILURE_KEY`), so that no model
ever reads it as the agent's answer. Pure: the task's record and the time in, an Outcome out.
"""

from __future__ import annotations

import msgspec

from accord.core import Outcome, TaskRecord
from accord.core import agent as moves
from accord.harness._wire import STATUS_KEY, SubState
from accord.harness.core._conversation import agent_text, chain, park, refs_ended, resuming
from accord.harness.core._state import MODEL_FAILURE_KEY, extension_of
from accord.wire import UNSET, Task

REASONS = ("model_unavailable", "rate_limited", "context_too_long", "model_refused", "model_error")
RETRY = "send another message or /retry"


def failure_line(reason: str, model: str, detail: str) -> str:
    """One line: what failed, and what the participant can do about it."""
    said = f" ({detail})" if detail else ""
    if reason == "model_unavailable":
        return f"the model {model} could not be reached{said}; {RETRY}"
    if reason == "rate_limited":
        return f"the model {model} refused for its rate limit{said}; wait a little, then {RETRY}"
    if reason == "context_too_long":
        return (
            f"the conversation is longer than the model {model} takes{said}; choose a model "
            "with a longer context (/model), or start a new conversation"
        )
    if reason == "model_refused":
        return f"the model {model} refused to answer{said}; rephrase your message"
    return f"the model {model} failed{said}; {RETRY}"


def model_failed(
    record: TaskRecord | None, now_ms: int, line: str, reason: str, model: str, turn: str = ""
) -> Outcome:
    """The turn ends on a failed model call: a conversation parks awaiting the next message,
    a delegated task fails; either with ``line`` as its status message, which names the turn
    (``turn``: its journal's key) for ``/retry``."""
    marks = {"reason": reason, "model": model, "turn": turn}
    told = msgspec.structs.replace(agent_text(record, line), metadata={MODEL_FAILURE_KEY: marks})
    extension = extension_of(record.task) if record is not None else None
    if extension is None or extension.lifecycle != "delegated":
        return park(record, now_ms, told, SubState.AWAITING_NEXT_MESSAGE.value, reason)

    def failed(rec: TaskRecord | None, now: int) -> Outcome:
        return chain(rec, now, (refs_ended, lambda r, n: moves.move(r, "fail", n, told)))

    return resuming(record, now_ms, failed)


def failure_of(task: Task) -> str | None:
    """The kind of model failure that ended the task's last turn, while the task is parked
    on it (None: its last turn did not fail)."""
    metadata = task.metadata
    if metadata is UNSET:
        return None
    value = metadata.get(STATUS_KEY)
    if isinstance(value, dict) and value.get("reason") in REASONS:
        return str(value["reason"])
    return None


def failed_turn(task: Task) -> str | None:
    """The journal key of the turn a model's failure ended, while the task is parked on it
    (None: its last turn did not fail, or the failure named no turn)."""
    if failure_of(task) is None:
        return None
    for message in reversed(task.history):
        marks = message.metadata.get(MODEL_FAILURE_KEY) if message.metadata else None
        if isinstance(marks, dict):
            turn = marks.get("turn")
            return turn if isinstance(turn, str) and turn else None
    return None
