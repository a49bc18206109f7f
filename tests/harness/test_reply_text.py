"""What the harness writes as text: a streamed answer's chunks are never empty text parts (its
last chunk carries text and says it is the last), no message has an empty text part, and a
child's result reaches its parent's model as its artifacts read as one text, apart from the
line that says how it ended."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.harness.delegation_kit import Scripts, delegating, read, spawn
from tests.harness.engine_kit import ALICE, brief, said, send, serving
from tests.waiting import until

from accord.harness import Conversation, HarnessAgent, HarnessSettings
from accord.harness.core._delegation import Observed, result_text, told_message
from accord.harness.models import ModelEvent, ModelResponse, TextDelta
from accord.wire._model import Artifact, Message, Part, Role, Task, TaskState, TaskStatus

pytestmark = pytest.mark.unit


class Streams:
    """A streaming model whose answers are given pieces of text."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)

    async def respond(self, conversation: Conversation) -> ModelResponse:
        raise AssertionError("a streaming model is streamed")

    async def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        pieces = self.answers.pop(0) if self.answers else ["ok"]
        for piece in pieces:
            yield TextDelta(piece)
        yield ModelResponse("".join(pieces))


def no_empty_text(task: Task) -> None:
    for artifact in task.artifacts:
        assert artifact.parts and all(p.text != "" for p in artifact.parts), artifact
    for message in task.history:
        assert message.parts and all(p.text != "" for p in message.parts), message


async def test_no_artifact_or_message_has_an_empty_text_part() -> None:
    model = Streams(["alpha ", "beta ", "g"], ["x"], [])
    agent = HarnessAgent(HarnessSettings(model="main"), {"main": model})
    async with serving(agent) as engine:
        task = await send(engine, ALICE, "first")
        assert said(task) == "alpha beta g"
        task = await send(engine, ALICE, "second", task.id)  # a one-character answer
        assert said(task) == "x"
        task = await send(engine, ALICE, "third", task.id)  # an answer with no text at all
        assert said(task) == "(the model answered with no text)"
        stored = await read(engine, task.id)
    no_empty_text(stored)
    first, second = stored.artifacts
    assert "".join(p.text or "" for p in first.parts) == "alpha beta g"
    assert [p.text for p in second.parts] == ["x"]


def test_a_childs_streamed_artifact_reads_as_one_text_apart_from_its_ending() -> None:
    streamed = Artifact(
        artifact_id="reply-1",
        name="reply",
        parts=[Part(text="alpha "), Part(text="beta "), Part(text="gamma")],
    )
    table = Artifact(artifact_id="t", name="table", parts=[Part(text="a"), Part(data={"n": 1})])
    ended = Message(message_id="s", role=Role.AGENT, parts=[Part(text="alpha beta gamma")])
    child = Task(
        id="p.1",
        context_id="c",
        status=TaskStatus(state=TaskState.COMPLETED, message=ended),
        artifacts=[streamed, table],
    )
    # (the status message says what the streamed artifact does: once)
    result = result_text(child)
    assert result == '[artifact reply]\nalpha beta gamma\n\n[artifact table]\na\n{"n": 1}'
    told = told_message("p", "p.1", None, Observed("COMPLETED"), result, "accord")
    assert told.text().startswith("Sub-task p.1 (on this agent) ended: COMPLETED.\n\n[artifact")


async def test_the_parent_model_reads_the_child_result_apart_from_the_status_line() -> None:
    scripts = Scripts(root=[[spawn("venues", "three venues")], "Looking.", "Noted."])

    async def model(conversation: Conversation) -> object:
        if conversation.task_id.endswith(".1"):
            return "Halle, Dock"
        return await scripts(conversation)

    async with delegating(model) as (engine, _):  # type: ignore[arg-type]
        parent = await send(engine, ALICE, brief({}, "plan"))

        async def told() -> object:
            asked = scripts.asked_on(parent.id)
            return asked[-1] if len(asked) == 3 else None

        resumed = await until(told, "the parent's turn on its child's end")
        last = resumed.entries[-1].text
        assert last.startswith(f"Sub-task {parent.id}.1 (on this agent) ended: COMPLETED.\n")
        assert "\nIts result:\n<untrusted" in last
        assert "\nHalle, Dock\n" in last
        assert (await read(engine, parent.id)).status.state is TaskState.INPUT_REQUIRED
