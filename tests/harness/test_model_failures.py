"""A model's failure ends the turn, never the conversation (on an in-memory engine): the
conversation parks saying what failed and what to do, no model ever reads that note, ``/retry``
runs only a failed turn (and not for a watcher), a delegated task fails with the same words
and its parent's model reads them, and the one-line wording of each kind of failure."""

from __future__ import annotations

from typing import Any

import pytest
from tests.harness.delegation_kit import Scripts, delegating, read, spawn
from tests.harness.engine_kit import ALICE, BOB, brief, running, said, send, sub_state
from tests.waiting import until

from accord.harness import Conversation
from accord.harness._wire import STATUS_KEY
from accord.harness.core._failure import failure_line
from accord.harness.models import ModelError
from accord.wire._model import TaskState

pytestmark = pytest.mark.unit

DOWN = ModelError(
    "model main: connection refused",
    reason="model_unavailable",
    model="openai:main",
    detail="connection refused",
)


class Flaky:
    """A model that fails while ``down``, else answers with the participants' messages."""

    def __init__(self) -> None:
        self.down = True
        self.seen: list[Conversation] = []

    async def __call__(self, conversation: Conversation) -> str:
        self.seen.append(conversation)
        if self.down:
            raise DOWN
        return " | ".join(e.text for e in conversation.entries)


async def test_a_failed_model_call_parks_the_conversation_and_retry_runs_it_again() -> None:
    model = Flaky()
    async with running(model=model) as (engine, _):
        task = await send(engine, ALICE, brief({"bob": "watcher"}, "hello?"))
        assert task.status.state is TaskState.INPUT_REQUIRED
        assert said(task) == (
            "the model openai:main could not be reached (connection refused); send another "
            "message or /retry"
        )
        assert task.metadata[STATUS_KEY] == {
            "sub_state": "awaiting-next-message",
            "reason": "model_unavailable",
        }
        # A watcher may not run it again; the reporter may.
        refused = await send(engine, BOB, "/retry", task.id)
        assert "a watcher may only run commands that read the task" in said(refused)
        model.down = False
        retried = await send(engine, ALICE, "/retry", task.id)
        assert said(retried) == "hello?"  # (the failure's note is no entry the model reads)
        assert sub_state(retried) == "awaiting-next-message"
        assert STATUS_KEY in retried.metadata and "reason" not in retried.metadata[STATUS_KEY]
        nothing = await send(engine, ALICE, "/retry", task.id)
        assert said(nothing).startswith("Nothing to retry")
        assert nothing.status.state is TaskState.INPUT_REQUIRED
        # The next message after a failure has its turn: both messages, in order.
        model.down = True
        await send(engine, ALICE, "one", task.id)
        model.down = False
        after = await send(engine, ALICE, "two", task.id)
        assert said(after) == "hello? | hello? | one | two"


async def test_a_delegated_task_fails_with_the_failure_in_words_and_the_parent_reads_them() -> None:
    scripts = Scripts(root=[[spawn("venues", "three venues")], "A sub-task looks.", "Noted."])

    async def model(conversation: Conversation) -> Any:
        if conversation.task_id.endswith(".1"):
            raise DOWN
        return await scripts(conversation)

    async with delegating(model) as (engine, _):  # type: ignore[arg-type]
        parent = await send(engine, ALICE, brief({}, "plan"))
        child_id = f"{parent.id}.1"

        async def failed() -> Any:
            child = await read(engine, child_id)
            return child if child.status.state is TaskState.FAILED else None

        child = await until(failed, "the child to fail")
        line = said(child)
        assert line.startswith("the model openai:main could not be reached (connection refused)")
        assert "The agent failed" not in line

        async def told() -> Any:
            asked = scripts.asked_on(parent.id)
            return asked[-1] if len(asked) == 3 else None

        resumed = await until(told, "the parent's turn on its child's end")
        last = resumed.entries[-1].text
        assert f"Sub-task {child_id} (on this agent) ended: FAILED." in last
        assert line in last


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (
            "model_unavailable",
            "the model m could not be reached (x); send another message or /retry",
        ),
        ("rate_limited", "the model m refused for its rate limit (x); wait a little, then send"),
        ("context_too_long", "the conversation is longer than the model m takes (x); choose"),
        ("model_refused", "the model m refused to answer (x); rephrase your message"),
        ("model_error", "the model m failed (x); send another message or /retry"),
    ],
)
def test_each_kind_of_failure_says_what_failed_and_what_to_do(reason: str, expected: str) -> None:
    line = failure_line(reason, "m", "x")
    assert line.startswith(expected) and "\n" not in line
