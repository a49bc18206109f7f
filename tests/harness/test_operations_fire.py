"""Every hook operation docs/harness.md lists fires, each phase of each, with the task, the
sender and the sender's role in its context (tiny-harness declares operations that never
fire and leaves participants out of its contexts)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.harness.channel_kit import asking, channel
from tests.harness.engine_kit import (
    ALICE,
    BOB,
    CONTROL,
    Recorder,
    brief,
    envelope,
    running,
    send,
)

from accord.harness import Conversation, HarnessAgent, ModelResponse, ToolCall
from accord.harness.hooks import OPERATIONS, Context, FunctionExecutor

DOCS = Path(__file__).resolve().parents[2] / "docs/harness.md"


def documented_operations() -> list[str]:
    """The operations of docs/harness.md's table under "### The operations"."""
    text = DOCS.read_text()
    section = text.split("### The operations", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"^\| `([a-z_.]+)` \|", section, re.MULTILINE)


def test_the_docs_list_every_operation_of_the_catalogue() -> None:
    assert sorted(documented_operations()) == sorted(OPERATIONS)


async def test_every_documented_operation_fires_at_each_phase_with_who_it_is_for() -> None:
    fired: list[tuple[str, Context]] = []

    def setup(agent: HarnessAgent) -> None:
        def record(point: str, context: Context) -> None:
            fired.append((point, context))

        agent.hooks.register(FunctionExecutor("record", record, priority=0))  # every point

    asks = asking(Recorder())

    async def planning(conversation: Conversation) -> str | ModelResponse:
        """Makes a plan with a tool in the first turn (llm.invoked and tool.invoked fire);
        asks a participant when told to (help.requested, channel.sent)."""
        if conversation.model_calls == 0 and not conversation.steps:
            plan = {"steps": [{"name": "book a venue"}]}
            return ModelResponse("", (ToolCall("create_plan", plan),))
        return await asks(conversation)

    async with running(model=planning, setup=setup) as (engine, agent):
        task = await send(engine, ALICE, brief({"alice": "admin", "bob": "watcher"}))
        brief_id = task.history[0].message_id
        await send(engine, BOB, "/status", task.id)
        people = [
            {"id": "alice", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "reporter"},
            {"id": "accord", "kind": "agent", "role": "assignee"},
        ]
        await send(engine, ALICE, [envelope({"kind": "task", "payload": {"participants": people}})],
                   task.id)  # fmt: skip
        await send(engine, BOB, "/sub-task a child", task.id)
        asked = await send(engine, ALICE, "ask bob Which venue?", task.id)
        request = asked.status.message.message_id  # type: ignore[union-attr]
        answer = channel(
            channel_id=task.id, sender="bob", kind="help_reply", in_reply_to=request, text="A"
        )
        await send(engine, BOB, [answer], task.id)
        await send(engine, ALICE, [CONTROL], task.id)
        await agent.moves.drain()
    seen = {point for point, _ in fired}
    missing = [
        f"{operation}.{phase}"
        for operation in documented_operations()
        for phase in ("pre", "in", "post")
        if f"{operation}.{phase}" not in seen
    ]
    assert missing == []
    for point, context in fired:
        # (the first message of a task is judged before the task exists: no id yet)
        first = point.startswith("message.received.") and context.correlation_id == brief_id
        assert bool(context.task_id) is not first, point
        assert context.sender in ("alice", "bob"), point
        assert context.sender_role is not None, point
        assert context.correlation_id, point
