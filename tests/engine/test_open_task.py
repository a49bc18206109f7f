"""An agent opens another task (TaskHandle.create_task) and reads one (TaskHandle.get_task):
the new task is durable on return with its first moves in the same append, in the opener's
tenant and context, runs nothing until a message comes, and counts against the tenant's task
limit; reads see only the opener's tenant."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.engine.test_continuation import message
from tests.marks import STORES
from tests.waiting import until

from accord.agents._api import AgentError, RequestContext, TaskHandle
from accord.core import agent as moves
from accord.core._caller import Caller
from accord.core._limits import Limits
from accord.engine import Engine, EngineConfig
from accord.store._base import TaskStore
from accord.store._memory import MemoryStore
from accord.store._postgres import PostgresStore
from accord.store._sqlite import SqliteStore
from accord.wire._model import Message, Part, Role, Task, TaskState

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


class Naming:
    """Opens ``<its task>.1`` with a first message twice (the second is refused), and runs
    it at once (Engine.run_task: its ``resume``, as recovery would)."""

    def __init__(self) -> None:
        self.engine: Engine | None = None
        self.errors: list[str] = []
        self.started: list[bool] = []

    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None:
        assert self.engine is not None
        name = f"{task.task_id}.1"
        brief = Message(message_id="brief", role=Role.USER, parts=[Part(text="the brief")])
        for _ in range(2):
            try:
                await task.create_task(task_id=name, message=brief)
            except AgentError as exc:
                self.errors.append(str(exc))
        self.started.append(await self.engine.run_task(name, ctx.tenant))
        self.started.append(await self.engine.run_task(name, ctx.tenant))  # (runs already)
        await task.complete()

    async def cancel(self, ctx: RequestContext, task: TaskHandle) -> None:
        return None

    async def resume(self, ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        await task.complete(f"ran on {ctx.text}")


@pytest.mark.parametrize("kind", STORES)
async def test_a_named_task_is_opened_once_and_run_task_starts_its_run(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store: TaskStore
    if kind == "memory":
        store = MemoryStore()
    elif kind == "sqlite":
        store = SqliteStore(str(tmp_path / "a.db"))
    else:
        store = PostgresStore(request.getfixturevalue("pg_url"))
    agent = Naming()
    engine = Engine(store, agent)
    agent.engine = engine
    await engine.start()
    try:
        parent = await engine.send_message(message("open"), ALICE)
        assert isinstance(parent, Task)
        name = f"{parent.id}.1"
        assert agent.errors == [f"a task {name!r} exists already"]
        assert agent.started == [True, False]

        async def ran() -> Task | None:
            child = await engine.get_task(name, ALICE)
            return child if child.status.state is TaskState.COMPLETED else None

        child = await until(ran, "the child task to complete")
        assert child is not None and child.status.message.text() == "ran on the brief"  # type: ignore[union-attr]
    finally:
        await engine.stop()
