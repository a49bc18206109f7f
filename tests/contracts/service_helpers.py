"""A contract service on a real store, with the other agent played by the test."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from accord.contracts._errors import NOT_A_PARTY, ContractRefusal
from accord.contracts._gate import ContractGate
from accord.contracts._peers import PeerCard
from accord.contracts._service import ContractService
from accord.contracts._settings import ContractSettings, Identity
from accord.contracts._tables import contract_store
from accord.contracts._wire import Notice, Reference
from accord.engine import Engine
from accord.signing._keys import AgentKey, KeySet
from accord.store import open_store
from accord.wire._model import AgentCard

B_URL = "https://b.example"


class FakePeers:
    """The other agents, as the service sees them: their keys, and the notices it sends."""

    def __init__(self, keys: dict[str, KeySet]) -> None:
        self.keys = keys
        self.sent: list[tuple[str, Notice]] = []

    async def card(self, agent_id: str, *, fresh: bool = False) -> PeerCard:
        if agent_id not in self.keys:
            raise ContractRefusal(NOT_A_PARTY, f"{agent_id!r} is not a configured peer")
        card = AgentCard(name=agent_id, description="", version="1")
        return PeerCard(agent_id, self.keys[agent_id], "https://a.example", "JSONRPC", card, 0.0)

    async def send(self, agent_id: str, notice: Notice, reference: Reference) -> str:
        self.sent.append((agent_id, notice))
        return "ok"

    async def aclose(self) -> None:
        pass


@asynccontextmanager
async def responder_service(
    url: str, key: AgentKey, initiator_keys: KeySet, *, agent: Any = None, **settings: Any
) -> AsyncIterator[ContractService]:
    """agent:b's contract service on the store at ``url``, its engine running ``agent``
    (default: an echo)."""
    store = open_store(url)
    engine = Engine(store, agent or _echo)
    service = ContractService(
        identity=Identity("agent:b", KeySet([key])),
        settings=ContractSettings(**settings),
        store=contract_store(store),
        engine=engine,
        peers=FakePeers({"agent:a": initiator_keys}),  # type: ignore[arg-type]
        public_url=B_URL,
        agent=agent,
        skills=("browse",),
    )
    engine.add_gate(ContractGate(service))
    await engine.start()
    try:
        yield service
    finally:
        await engine.stop()


async def _echo(ctx: Any, task: Any) -> None:
    await task.start_working()
    await task.complete(f"echo: {ctx.text}")


def now_ms() -> int:
    return time.time_ns() // 1_000_000
