"""Driving a harness agent on an in-memory engine: who sends, sending, reading replies."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import msgspec

from accord.core._caller import Caller
from accord.engine import Engine
from accord.harness import Conversation, HarnessAgent, HarnessSettings
from accord.harness._wire import EVENT_MEDIA_TYPE, STATUS_KEY, TASK_KEY
from accord.harness.models import FunctionModel, ModelResponse
from accord.store import TaskStore
from accord.store._memory import MemoryStore
from accord.wire._model import Message, Part, Role, SendMessageRequest, Task

ALICE = Caller(participant="alice")
BOB = Caller(participant="bob")
CAROL = Caller(participant="carol")
_ids = itertools.count()


def request(parts: list[Part] | str, task_id: str = "") -> SendMessageRequest:
    if isinstance(parts, str):
        parts = [Part(text=parts)]
    return SendMessageRequest(
        message=Message(message_id=f"m{next(_ids)}", role=Role.USER, parts=parts, task_id=task_id)
    )


async def send(engine: Engine, caller: Caller, parts: list[Part] | str, task_id: str = "") -> Task:
    result = await engine.send_message(request(parts, task_id), caller)
    assert isinstance(result, Task)
    return result


def said(task: Task) -> str:
    """The text of the task's status message."""
    message = task.status.message
    assert isinstance(message, Message)
    return message.text()


def said_metadata(task: Task) -> dict[str, Any]:
    message = task.status.message
    assert isinstance(message, Message) and isinstance(message.metadata, dict)
    return message.metadata


def extension(task: Task) -> dict[str, Any]:
    value: dict[str, Any] = task.metadata[TASK_KEY]
    return value


def sub_state(task: Task) -> str | None:
    metadata = task.metadata if isinstance(task.metadata, dict) else {}
    value = metadata.get(STATUS_KEY)
    return value.get("sub_state") if isinstance(value, dict) else None


def brief(participants: dict[str, str], text: str = "let's plan") -> list[Part]:
    people = [{"id": who, "kind": "human", "role": role} for who, role in participants.items()]
    payload = {"name": "offsite", "goal": "a plan", "participants": people}
    return [Part(text=text), envelope({"kind": "task", "payload": payload})]


def envelope(data: dict[str, Any]) -> Part:
    return Part(data=data, media_type=EVENT_MEDIA_TYPE)


CONTROL = envelope({"kind": "control", "action": "complete"})


class Recorder:
    """A model that answers with what it saw, and remembers it."""

    def __init__(self) -> None:
        self.seen: list[Conversation] = []

    async def __call__(self, conversation: Conversation) -> str:
        self.seen.append(conversation)
        users = [entry.text for entry in conversation.entries if entry.role == "user"]
        return f"{conversation.model}: {' | '.join(users)}"

    @property
    def last_users(self) -> list[str]:
        return [e.text for e in self.seen[-1].entries if e.role == "user"]


Setup = Callable[[HarnessAgent], Awaitable[None] | None]


@asynccontextmanager
async def running(
    store: MemoryStore | None = None,
    model: Callable[[Conversation], Awaitable[str | ModelResponse]] | None = None,
    *,
    models: tuple[str, ...] = ("other",),
    setup: Callable[[HarnessAgent], None] | None = None,
) -> AsyncIterator[tuple[Engine, HarnessAgent]]:
    """An engine running a harness agent whose models (``main`` and each of ``models``)
    all answer with ``model``; ``setup`` registers hooks and commands first."""
    answer = FunctionModel(model or Recorder())
    agent = HarnessAgent(
        HarnessSettings(model="main", models=models),
        {name: answer for name in ("main", *models)},
    )
    if setup is not None:
        setup(agent)
    engine = Engine(store or MemoryStore(), agent)
    agent.attach_engine(engine)  # (as accord serve attaches it)
    await engine.start()
    try:
        yield engine, agent
    finally:
        await engine.stop()


@asynccontextmanager
async def serving(agent: HarnessAgent, store: TaskStore | None = None) -> AsyncIterator[Engine]:
    """An engine running ``agent`` as it is (on ``store``, or a new MemoryStore), attached to
    it as accord serve attaches it."""
    engine = Engine(store if store is not None else MemoryStore(), agent)
    agent.attach_engine(engine)
    await engine.start()
    try:
        yield engine
    finally:
        await engine.stop()


def replaced(value: Any, **changes: Any) -> Any:
    return msgspec.structs.replace(value, **changes)
