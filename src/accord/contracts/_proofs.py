"""What makes a contract binding: the terms hash, the parties' signatures over the terms, and
their acceptances.

**Terms hash** (OpenClasp's recipe): SHA-256 over the RFC 8785 form of the contract *with
``signatures`` present and emptied*, unpadded base64url. Emptied, not deleted: the two give
different hashes, and OpenClasp's policy engine empties.

**Contract signatures** (``contract.signatures[agentId]``, OpenClasp's optional per-party
signatures): Ed25519 over the RFC 8785 form of the contract with ``signatures`` *deleted*
(OpenClasp's preimage for them). Checked when present, never required.

**An ``ed25519`` acceptance** signs a domain-separated statement, never the bare record::

    {"type": "accord.contract-acceptance/v1", "interactionId": …, "agentId": …,
     "termsHash": …, "acceptedAt": …, "keyId": …}

(RFC 8785 bytes, Ed25519, no pre-hash). Naming the interaction and the key means a signature
taken from one contract cannot be replayed onto another, nor claimed for another key. The
bare-record form OpenClasp hints at names no interaction, so it is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from accord.contracts._errors import (
    INVALID_ACCEPTANCE,
    INVALID_SIGNATURE,
    ContractRefusal,
)
from accord.signing import AgentKey, KeySet, b64url, b64url_decode, canonical, canonical_hash
from accord.wire import parse_timestamp

ACCEPTANCE_TYPE = "accord.contract-acceptance/v1"
ALGORITHM = "Ed25519"
SIGNED_METHODS = ("ed25519",)
CHANNEL_METHODS = ("oauth_account", "oauth_installation")

# An agent's published keys, by agent id (None: not known here).
KeysOf = Callable[[str], KeySet | None]


def terms_hash(contract: Mapping[str, Any]) -> str:
    """The terms hash of a (schema-normalized) contract: ``signatures`` emptied, then hashed."""
    return canonical_hash({**contract, "signatures": {}})


def contract_signing_payload(contract: Mapping[str, Any]) -> bytes:
    body = {k: v for k, v in contract.items() if k not in ("signatures", "signature")}
    return canonical(body)


def sign_contract(contract: Mapping[str, Any], key: AgentKey) -> dict[str, str]:
    """A party's signature over the terms, for ``contract.signatures[agentId]``."""
    value = key.sign(contract_signing_payload(contract))
    return {"algorithm": ALGORITHM, "keyId": key.kid, "value": b64url(value)}


def verify_contract_signature(
    contract: Mapping[str, Any], agent_id: str, keys: KeySet | None, at_ms: int
) -> None:
    """Check ``contract.signatures[agent_id]`` against the agent's key valid at ``at_ms``."""
    signature = contract.get("signatures", {}).get(agent_id)
    if signature is None:
        raise ContractRefusal(INVALID_SIGNATURE, f"{agent_id} has not signed the terms")
    _check_signature(
        signature,
        contract_signing_payload(contract),
        keys,
        at_ms,
        f"{agent_id}'s signature over the terms",
        INVALID_SIGNATURE,
    )


def acceptance_payload(
    interaction_id: str, agent_id: str, hash_: str, accepted_at: str, key_id: str
) -> bytes:
    return canonical(
        {
            "type": ACCEPTANCE_TYPE,
            "interactionId": interaction_id,
            "agentId": agent_id,
            "termsHash": hash_,
            "acceptedAt": accepted_at,
            "keyId": key_id,
        }
    )


def signed_acceptance(
    interaction_id: str, agent_id: str, hash_: str, accepted_at: str, key: AgentKey
) -> dict[str, Any]:
    """An ``ed25519`` acceptance record of ``agent_id``, signed with ``key``."""
    payload = acceptance_payload(interaction_id, agent_id, hash_, accepted_at, key.kid)
    return {
        "agentId": agent_id,
        "method": "ed25519",
        "termsHash": hash_,
        "acceptedAt": accepted_at,
        "signature": {"algorithm": ALGORITHM, "keyId": key.kid, "value": b64url(key.sign(payload))},
    }


def channel_acceptance(agent_id: str, hash_: str, accepted_at: str) -> dict[str, Any]:
    """An ``oauth_account`` acceptance: an authenticated operator of the agent accepted; the
    channel it came over vouches for it (an agent without keys)."""
    return {
        "agentId": agent_id,
        "method": "oauth_account",
        "termsHash": hash_,
        "acceptedAt": accepted_at,
    }


def verify_acceptance(
    acceptance: Mapping[str, Any],
    *,
    interaction_id: str,
    agent_id: str,
    hash_: str,
    keys: KeySet | None,
    vouched_by: str | None = None,
    signed_only: bool = False,
) -> None:
    """Check ``agent_id``'s acceptance of the terms ``hash_`` of ``interaction_id``.

    ``ed25519``: the signature verifies over the statement naming this interaction, agent,
    hash, time and key, with that agent's key ``keyId``, valid at ``acceptedAt``.
    ``oauth_*``: never with ``signed_only``; else only when ``vouched_by`` — the
    authenticated sender it arrived from, or None offline — is that agent.
    ContractRefusal(invalid_acceptance) otherwise."""
    if acceptance.get("agentId") != agent_id:
        raise _refused(f"the acceptance under {agent_id} names {acceptance.get('agentId')!r}")
    if acceptance.get("termsHash") != hash_:
        raise _refused(f"{agent_id}'s acceptance is of other terms (termsHash differs)")
    method = acceptance.get("method")
    if method in CHANNEL_METHODS:
        if signed_only:
            raise _refused(
                f"{agent_id}'s acceptance must be signed (ed25519), not {method} "
                "(require_signed_acceptances)"
            )
        if "signature" in acceptance:
            raise _refused(f"{agent_id}'s {method} acceptance carries a signature")
        if vouched_by != agent_id:
            raise _refused(
                f"{agent_id}'s {method} acceptance is unsigned and did not come from {agent_id}"
            )
        return
    signature = acceptance.get("signature")
    if signature is None:
        raise _refused(f"{agent_id}'s ed25519 acceptance has no signature")
    accepted_at = str(acceptance.get("acceptedAt", ""))
    try:
        at_ms = parse_timestamp(accepted_at)
    except ValueError:
        raise _refused(f"{agent_id}'s acceptedAt is not a timestamp") from None
    key_id = str(signature.get("keyId", ""))
    payload = acceptance_payload(interaction_id, agent_id, hash_, accepted_at, key_id)
    _check_signature(
        signature, payload, keys, at_ms, f"{agent_id}'s acceptance", INVALID_ACCEPTANCE
    )


def _check_signature(
    signature: Mapping[str, Any],
    payload: bytes,
    keys: KeySet | None,
    at_ms: int,
    what: str,
    code: str,
) -> None:
    if signature.get("algorithm") != ALGORITHM:
        raise ContractRefusal(code, f"{what}: algorithm must be {ALGORITHM}")
    kid = str(signature.get("keyId", ""))
    key = keys.get(kid) if keys is not None else None
    if key is None:
        raise ContractRefusal(code, f"{what}: key {kid!r} is not one the agent publishes")
    if not key.valid_at(at_ms):
        raise ContractRefusal(code, f"{what}: key {kid!r} was not valid at the time it names")
    try:
        value = b64url_decode(str(signature.get("value", "")))
    except ValueError:
        raise ContractRefusal(code, f"{what}: the signature is not base64url") from None
    if not key.verifies(value, payload):
        raise ContractRefusal(code, f"{what}: the signature does not verify")


def _refused(message: str) -> ContractRefusal:
    return ContractRefusal(INVALID_ACCEPTANCE, message)
