"""Terms, documents and keys the contract tests share."""

from __future__ import annotations

import copy
from typing import Any

from accord.contracts import _documents as documents
from accord.contracts._proofs import signed_acceptance
from accord.signing._keys import AgentKey, KeySet, load_private_pem
from accord.wire._time import format_timestamp

INTERACTION = "11111111-1111-4111-8111-111111111111"

# The reference's test vector (interaction-contracts digest, section 3.2).
VECTOR_TERMS: dict[str, Any] = {
    "protocolVersion": "0.1",
    "interactionId": INTERACTION,
    "purpose": "Research a market",
    "parties": ["agent:a", "agent:b"],
    "taskCategory": "research",
    "requestedOutcome": "A sourced brief",
    "successCriteria": ["Primary sources included"],
    "allowedActions": ["browse"],
    "prohibitedActions": ["purchase"],
    "allowedData": ["public"],
    "prohibitedData": ["secrets"],
    "evidenceRequirements": ["links"],
    "delegationRules": ["explicit"],
    "humanApprovalRequirements": [],
    "factCheckingPolicy": "important_claims",
    "mediationPolicy": "mutual_consent",
    "retentionDays": 30,
    "completionConditions": ["brief delivered"],
    "cancellationConditions": ["either party"],
    "signatures": {},
}
VECTOR_HASH = "qXTamL8xj1lXMkf-HoxaVmy2-orRI_Wejd_JVzy5YFA"
VECTOR_HASH_SIGNATURES_DELETED = "ifIbudJXagoLBEvZdh7ZtLyBnnIf3blztf_HcOlFJI8"

NOW_MS = 1_800_000_000_000  # 2027-01-15T08:00:00Z
HOUR_MS = 3_600_000


def terms(**changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(VECTOR_TERMS), **changes}


def new_key(not_before_ms: int | None = None, not_after_ms: int | None = None) -> AgentKey:
    from accord.signing._keys import generate_private_pem

    private = load_private_pem(generate_private_pem())
    return AgentKey.from_private(private, not_before_ms, not_after_ms)


def proposal(
    key: AgentKey,
    *,
    now_ms: int = NOW_MS,
    expires_ms: int | None = None,
    contract: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A pending document of agent:a to agent:b, agent:a's acceptance signed with ``key``."""
    return documents.new_proposal(
        contract or terms(),
        initiator="agent:a",
        responder="agent:b",
        initiator_transport=documents.transport("https://a.example"),
        responder_transport=documents.transport("https://b.example"),
        now_ms=now_ms,
        expires_ms=expires_ms if expires_ms is not None else now_ms + 72 * HOUR_MS,
        accept=lambda hash_, at: signed_acceptance(
            str((contract or VECTOR_TERMS)["interactionId"]), "agent:a", hash_, at, key
        ),
    )


def accepted(document: dict[str, Any], key: AgentKey, at_ms: int) -> dict[str, Any]:
    """agent:b's signed acceptance of ``document``."""
    return signed_acceptance(
        document["interactionId"], "agent:b", document["termsHash"], format_timestamp(at_ms), key
    )


def public(*keys: AgentKey) -> KeySet:
    """What a peer learns of ``keys``: their JWKS, without the private halves."""
    return KeySet.from_jwks(KeySet(keys).jwks())
