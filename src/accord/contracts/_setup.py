"""Putting interaction contracts into a server built from settings: the card's extensions
(OpenClasp's trust extension; accord's, with the agent id and its keys), the card's
signature, and the contract service with its gate, API and sweeper."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from accord.agents import Host
from accord.contracts._api import ContractApi
from accord.contracts._gate import ContractGate
from accord.contracts._peers import Peers
from accord.contracts._service import ContractService
from accord.contracts._settings import ContractSettings, Identity
from accord.contracts._tables import contract_store
from accord.contracts._wire import CONTRACTS_URI, TRUST_URI
from accord.server import Authenticator, Binding
from accord.service import Service
from accord.signing import _cards as cards
from accord.wire import AgentCard, AgentCardSignature, AgentExtension, encode


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
    service: Service,
    auth: Authenticator,
    identity: Identity,
    settings: ContractSettings | None,
    *,
    require_auth: bool,
    max_body: int,
    public_url: str,
    agent: Any,
) -> ContractApi:
    """Contracts on the application ``service`` serves: the contract service on its engine
    (its gate screens every message from now on, its sweeper runs while the engine does),
    and the operators' API at ``/contracts`` (the endpoint returned)."""
    engine: Host = service.engine
    settings = settings or ContractSettings()
    peers = Peers(settings, engine.clock)
    contracts = ContractService(
        identity=identity,
        settings=settings,
        store=contract_store(engine.store),
        engine=engine,
        peers=peers,
        public_url=public_url,
        agent=agent,
        skills=tuple(skill.id for skill in service.card.skills),
    )
    engine.add_gate(ContractGate(contracts))

    async def sweeping() -> None:
        try:
            await contracts.run_sweeper()
        finally:
            await peers.aclose()

    async def start() -> None:
        engine.spawn(sweeping())  # stopped (cancelled) with the engine, as its own loops

    engine.on_start(start)
    return ContractApi(contracts, Binding(service, auth, require_auth), max_body)
