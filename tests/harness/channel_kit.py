"""Channels in tests: channel parts, a harness whose roster agents are fakes that record
what they are sent (or refuse while down), and waiting for deliveries."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.harness.engine_kit import Recorder
from tests.waiting import until

from accord.client._errors import ConnectionFailedError
from accord.engine import Engine
from accord.harness import Conversation, HarnessAgent, HarnessSettings, ModelResponse
from accord.harness._roster import Credentials, Roster, RosterAgent
from accord.harness._transcript import ToolResult
from accord.harness._wire import CHANNEL_MEDIA_TYPE
from accord.harness.channels._outbox import DeliverySettings
from accord.harness.channels._tool import ask_participant_call
from accord.harness.models import FunctionModel
from accord.store._base import TaskStore
from accord.store._memory import MemoryStore
from accord.wire._model import Message, Part

FAST = DeliverySettings(
    timeout_s=5.0, max_attempts=50, retry_base_s=0.01, retry_max_s=0.05, poll_interval_s=0.05
)


def channel(**data: Any) -> Part:
    return Part(data=data, media_type=CHANNEL_MEDIA_TYPE)


def asking(recorder: Recorder) -> Callable[[Conversation], Awaitable[str | ModelResponse]]:
    """A model that asks when the newest message says ``ask <who> <question>`` (``ask bob
    Which venue? | A | B``: with options) and answers as ``recorder`` does otherwise."""

    async def model(conversation: Conversation) -> str | ModelResponse:
        if conversation.steps:  # (an ask that could not be made: its error result)
            last = conversation.steps[-1]
            return f"noted: {last.content}" if isinstance(last, ToolResult) else "noted"
        text = conversation.text
        if text.startswith("ask "):
            _, who, rest = text.split(" ", 2)
            question, *options = (piece.strip() for piece in rest.split("|"))
            return ask_participant_call(who, question, options)
        return await recorder(conversation)

    return model


@dataclass
class Agents:
    """The roster's agents as the harness sees them: what each was sent, in order."""

    got: list[tuple[str, Message]] = field(default_factory=list)
    down: set[str] = field(default_factory=set)
    attempts: int = 0

    def of(self, agent_id: str) -> list[Message]:
        return [message for who, message in self.got if who == agent_id]

    async def wait(self, count: int) -> None:
        await until(lambda: len(self.got) >= count, f"{count} messages sent to the agents")


class _Client:
    def __init__(self, agents: Agents, agent_id: str) -> None:
        self.agents = agents
        self.agent_id = agent_id

    async def send(self, message: Message, *, return_immediately: bool) -> None:
        assert return_immediately
        self.agents.attempts += 1
        if self.agent_id in self.agents.down:
            raise ConnectionFailedError("connection refused")
        self.agents.got.append((self.agent_id, message))


class FakeRoster(Roster):
    def __init__(self, agents: Agents, roster: Roster) -> None:
        super().__init__(tuple(roster.agents.values()))
        self.fakes = agents

    @asynccontextmanager
    async def connect(self, agent_id: str) -> AsyncIterator[Any]:
        yield _Client(self.fakes, agent_id)


def roster_of(*ids: str) -> tuple[RosterAgent, ...]:
    return tuple(
        RosterAgent(id=i, card=f"http://127.0.0.1:9/{i}", credentials=Credentials()) for i in ids
    )


@asynccontextmanager
async def with_agents(
    model: Callable[[Conversation], Awaitable[str | ModelResponse]],
    *ids: str,
    store: TaskStore | None = None,
    delivery: DeliverySettings = FAST,
    setup: Callable[[HarnessAgent], None] | None = None,
) -> AsyncIterator[tuple[Engine, HarnessAgent, Agents]]:
    """An engine running a harness whose roster lists ``ids`` (fakes: :class:`Agents`)."""
    settings = HarnessSettings(model="main", agents=roster_of(*ids), delivery=delivery)
    agent = HarnessAgent(settings, {"main": FunctionModel(model)})
    agents = Agents()
    agent.roster = FakeRoster(agents, agent.roster)
    if setup is not None:
        setup(agent)
    engine = Engine(store or MemoryStore(), agent)
    agent.attach_engine(engine)
    await engine.start()
    try:
        yield engine, agent, agents
    finally:
        await engine.stop()
