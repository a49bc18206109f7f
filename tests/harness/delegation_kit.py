"""Driving sub-tasks on an in-memory engine: a model whose answers are scripted per task (the
parent, its child ``.1``, a grandchild ``.1.1`` …), a harness attached to its engine, and
waiting for what the follower does in the background."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from accord.engine import Engine
from accord.harness import Conversation, HarnessAgent, HarnessSettings, ModelResponse, ToolCall
from accord.harness.models import FunctionModel
from accord.store._memory import MemoryStore
from accord.wire._model import Task

T = TypeVar("T")
Answer = str | list[ToolCall]


def level(task_id: str) -> str:
    """A task's place below its root: "" for the root, ".1" for its first child …"""
    _, dot, rest = task_id.partition(".")
    return dot + rest


class Scripts:
    """Answers per task level, in order (a text, or tool calls); every conversation asked
    is kept. A level with no answer left answers ``done <level>``."""

    def __init__(self, **by_level: list[Answer]) -> None:
        # (keyword names: root for "", c1 for ".1", c1_1 for ".1.1", c2 for ".2" …)
        self.answers = {_level_of(name): deque(items) for name, items in by_level.items()}
        self.asked: list[Conversation] = []

    async def __call__(self, conversation: Conversation) -> str | ModelResponse:
        self.asked.append(conversation)
        queue = self.answers.get(level(conversation.task_id))
        answer = queue.popleft() if queue else f"done {level(conversation.task_id) or 'root'}"
        return answer if isinstance(answer, str) else ModelResponse("", tuple(answer))

    def asked_on(self, task_id: str) -> list[Conversation]:
        return [c for c in self.asked if c.task_id == task_id]


def _level_of(name: str) -> str:
    if name == "root":
        return ""
    return "." + name.removeprefix("c").replace("_", ".")


def spawn(name: str, goal: str, **more: Any) -> ToolCall:
    return ToolCall("spawn_subtask", {"name": name, "goal": goal, **more})


@asynccontextmanager
async def delegating(
    model: Scripts,
    *,
    setup: Callable[[HarnessAgent], None] | None = None,
    **settings: Any,
) -> AsyncIterator[tuple[Engine, HarnessAgent]]:
    """An engine running a harness (model ``main`` answering with ``model``) attached to it,
    as ``accord serve`` attaches it: sub-tasks are followed."""
    agent = HarnessAgent(HarnessSettings(model="main", **settings), {"main": FunctionModel(model)})
    if setup is not None:
        setup(agent)
    engine = Engine(MemoryStore(), agent)
    agent.attach_engine(engine)
    await engine.start()
    try:
        yield engine, agent
    finally:
        await engine.stop()


async def read(engine: Engine, task_id: str) -> Task:
    record = await engine.store.get_task(task_id, None)
    assert record is not None, task_id
    return record.task
