"""An agent opens another task (TaskHandle.create_task) and reads one (TaskHandle.get_task):
the new task is durable on return with its first moves in the same append, in the opener's
tenant and context, runs nothing until a message comes, and counts against the tenant's task
limit; reads see only the opener's tenant."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.engine.test_continuation import message

from accord.agents.api import AgentError, RequestContext, TaskHandle
from accord.core import agent as moves
from accord.core.caller import Caller
from accord.core.limits import Limits
from accord.engine import Engine, EngineConfig
from accord.store.base import TaskStore
from accord.store.memory import MemoryStore
from accord.store.sqlite import SqliteStore
from accord.wire.model import Message, Part, Role, Task, TaskState

ALICE = Caller(identity="alice", tenant="t1")
BOB = Caller(identity="bob", tenant="t2")


class Opener:
    """Opens a parked child for "open", reads a task for "read <id>", and answers a child's
    message "child heard <text>"."""

    def __init__(self) -> None:
        self.opened: list[Task] = []
        self.read: list[Task | None] = []
        self.errors: list[str] = []

    async def __call__(self, ctx: RequestContext, task: TaskHandle) -> None:
        if ctx.text == "open":
            try:
                child = await task.create_task(
                    metadata={"parent": task.task_id},
                    message=Message(message_id="brief", role=Role.USER,
                                    parts=[Part(text="the brief")]),
                    then=lambda record, now: moves.move(record, "require_input", now),
                )  # fmt: skip
            except AgentError as exc:
                self.errors.append(str(exc))
            else:
                self.opened.append(child)
            await task.complete()
        elif ctx.text.startswith("read "):
            self.read.append(await task.get_task(ctx.text.split()[1]))
            await task.complete()
        else:
            await task.start_working()
            await task.complete(f"child heard {ctx.text}")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_an_opened_task_is_durable_parked_and_runs_when_a_message_comes(
    kind: str, tmp_path: Path
) -> None:
    store: TaskStore = MemoryStore() if kind == "memory" else SqliteStore(str(tmp_path / "a.db"))
    opener = Opener()
    engine = Engine(store, opener)
    await engine.start()
    try:
        parent = await engine.send_message(message("open"), ALICE)
        assert isinstance(parent, Task)
        [child] = opener.opened
        assert child.id != parent.id
        assert child.context_id == parent.context_id
        stored = await engine.get_task(child.id, ALICE)
        assert stored.status.state is TaskState.INPUT_REQUIRED
        assert stored.metadata == {"parent": parent.id}
        assert [m.text() for m in stored.history] == ["the brief"]
        assert stored.history[0].task_id == child.id
        events = await store.read_events(child.id, 0)
        assert [e.kind for e in events] == ["task", "status"]  # created, then parked
        assert opener.read == []  # nothing ran on it
        # Another tenant cannot see it; the opener's tenant reads it from another task.
        with pytest.raises(Exception) as hidden:
            await engine.get_task(child.id, BOB)
        assert "not found" in str(hidden.value)
        await engine.send_message(message(f"read {child.id}"), ALICE)
        await engine.send_message(message(f"read {child.id}"), BOB)
        assert [t.id if t else None for t in opener.read] == [child.id, None]
        # A message to it runs the agent on it.
        answered = await engine.send_message(message("hello", child.id), ALICE)
        assert isinstance(answered, Task)
        assert answered.status.state is TaskState.COMPLETED
    finally:
        await engine.stop()


async def test_an_opened_task_counts_against_the_tenants_limit() -> None:
    opener = Opener()
    engine = Engine(MemoryStore(), opener, EngineConfig(limits=Limits(tasks_per_tenant=1)))
    await engine.start()
    try:
        await engine.send_message(message("open"), ALICE)
        assert opener.opened == []
        assert opener.errors == ["the tenant already holds 1 tasks"]
    finally:
        await engine.stop()
