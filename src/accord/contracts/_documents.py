"""Interaction documents: building a proposal, and checking that one holds together (beyond
the schema: the ids agree, the parties are the two agents, the hash is the terms' hash, each
acceptance is filed under its own agent and is of these terms)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from accord.contracts._errors import INVALID_DOCUMENT, TERMS_HASH_MISMATCH, ContractRefusal
from accord.contracts._proofs import terms_hash
from accord.contracts._schema import (
    DEFAULT_BINDING,
    PROTOCOL_VERSION,
    TRANSPORT_PROTOCOL,
    SchemaError,
    parse_interaction,
)
from accord.signing import CanonicalError
from accord.wire import FieldViolation, format_timestamp


def transport(endpoint: str, binding: str = DEFAULT_BINDING) -> dict[str, str]:
    return {"protocol": TRANSPORT_PROTOCOL, "protocolBinding": binding, "endpoint": endpoint}


def checked(value: Any) -> dict[str, Any]:
    """``value`` as a valid, consistent interaction document (normalized); ContractRefusal
    naming every violation otherwise."""
    try:
        document = parse_interaction(value)
    except SchemaError as exc:
        raise ContractRefusal(
            INVALID_DOCUMENT,
            str(exc),
            interaction_id=_id_of(value),
            violations=exc.violations,
        ) from None
    check_consistent(document)
    return document


def _id_of(value: Any) -> str:
    found = value.get("interactionId") if isinstance(value, dict) else None
    return found if isinstance(found, str) else ""


def check_consistent(document: dict[str, Any]) -> None:
    interaction_id = str(document["interactionId"])
    terms = document["contract"]
    initiator = document["initiatorAgentId"]
    responder = document["responderAgentId"]

    def refuse(field: str, message: str) -> ContractRefusal:
        return ContractRefusal(
            INVALID_DOCUMENT,
            f"{field}: {message}",
            interaction_id=interaction_id,
            violations=[FieldViolation(field, message)],
        )

    if terms["interactionId"] != interaction_id:
        raise refuse("contract.interactionId", "differs from interactionId")
    if initiator == responder:
        raise refuse("responderAgentId", "the responder must be another agent than the initiator")
    if terms["parties"] != [initiator, responder]:
        raise refuse("contract.parties", "must be [initiatorAgentId, responderAgentId]")
    try:
        expected = terms_hash(terms)
    except CanonicalError as exc:
        raise refuse("contract", f"has no canonical JSON form: {exc}") from None
    if document["termsHash"] != expected:
        raise ContractRefusal(
            TERMS_HASH_MISMATCH,
            "termsHash is not the hash of the terms (a term was changed, or the hash is wrong)",
            interaction_id=interaction_id,
            violations=[FieldViolation("termsHash", "does not match the terms")],
        )
    for agent_id, acceptance in document["acceptances"].items():
        where = f'acceptances["{agent_id}"]'
        if agent_id not in (initiator, responder):
            raise refuse(where, "is not a party's")
        if acceptance["agentId"] != agent_id:
            raise refuse(f"{where}.agentId", "differs from the key it is filed under")
        if acceptance["termsHash"] != expected:
            raise refuse(f"{where}.termsHash", "is not the terms' hash")


def new_proposal(
    terms: dict[str, Any],
    *,
    initiator: str,
    responder: str,
    initiator_transport: dict[str, str] | None,
    responder_transport: dict[str, str],
    now_ms: int,
    expires_ms: int,
    accept: Callable[[str, str], dict[str, Any]],
) -> dict[str, Any]:
    """A pending interaction document for ``terms`` (already schema-valid), with the
    initiator's acceptance made by ``accept(terms_hash, accepted_at)``."""
    hash_ = terms_hash(terms)
    now = format_timestamp(now_ms)
    document: dict[str, Any] = {
        "protocolVersion": PROTOCOL_VERSION,
        "interactionId": terms["interactionId"],
        "initiatorAgentId": initiator,
        "responderAgentId": responder,
        "status": "pending",
        "contract": terms,
        "termsHash": hash_,
        "acceptances": {initiator: accept(hash_, now)},
        "responderTransport": responder_transport,
        "createdAt": now,
        "updatedAt": now,
        "expiresAt": format_timestamp(expires_ms),
    }
    if initiator_transport is not None:
        document["initiatorTransport"] = initiator_transport
    return checked(document)


def same_terms(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two documents are of the same interaction between the same agents on the same
    terms (what a notice from the other agent must match)."""
    keys = ("interactionId", "initiatorAgentId", "responderAgentId", "termsHash")
    return all(a[k] == b[k] for k in keys)
