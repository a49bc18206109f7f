"""Putting interaction contracts into a server built from settings: the card's extensions
(OpenClasp's trust extension; accord's, with the agent id and its keys), the card's
signature, and the contract service with its gate, API and sweeper."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from accord.agents.capabilities import Host
from accord.contracts.gate import ContractGate
from accord.contracts.peers import Peers
from accord.contracts.service import ContractService
from accord.contracts.settings import ContractSettings, Identity
from accord.contracts.tables import contract_store
from accord.contracts.wire import CONTRACTS_URI, TRUST_URI
from accord.signing import cards
from accord.wire.codec import encode
from accord.wire.model import AgentCard, AgentCardSignature, AgentExtension


def card_extensions(identity: Identity) -> list[AgentExtension]:
    return [
        AgentExtension(
            uri=TRUST_URI,
            description="OpenClasp trust: messages sent under an interaction contract carry "
            "its reference in their metadata.",
        ),
        AgentExtension(
            uri=CONTRACTS_URI,
            description="accord interaction contracts: this agent's id and public keys "
            "(Ed25519 JWKS); contract notices as data parts.",
            params={"agentId": identity.agent_id, "jwks": identity.keys.jwks()},
        ),
    ]


def signed(card: AgentCard, identity: Identity, now_ms: int) -> AgentCard:
    """``card`` signed with the key valid now (A2A §8.4), unchanged without one."""
    key = identity.keys.signing_key(now_ms)
    if key is None:
        return card
    signatures = [
        AgentCardSignature(protected=s["protected"], signature=s["signature"])
        for s in cards.sign(json.loads(encode(card)), key)
    ]
    return msgspec.structs.replace(card, signatures=signatures)


def attach(
    engine: Host,
    identity: Identity,
    settings: ContractSettings | None,
    *,
    public_url: str,
    agent: Any,
    card: AgentCard,
) -> ContractService:
    """The contract service of ``engine``: its gate screens every message from now on, and
    its sweeper runs while the engine does."""
    settings = settings or ContractSettings()
    peers = Peers(settings, engine.clock)
    service = ContractService(
        identity=identity,
        settings=settings,
        store=contract_store(engine.store),
        engine=engine,
        peers=peers,
        public_url=public_url,
        agent=agent,
        skills=tuple(skill.id for skill in card.skills),
    )
    engine.add_gate(ContractGate(service))

    async def sweeping() -> None:
        try:
            await service.run_sweeper()
        finally:
            await peers.aclose()

    async def start() -> None:
        engine.spawn(sweeping())  # stopped (cancelled) with the engine, as its own loops

    engine.on_start(start)
    return service
