"""Checking a contract document offline: the schema, the terms hash, every acceptance and
every signature over the terms, each against the keys given for its agent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accord.contracts import _documents as documents
from accord.contracts._errors import INVALID_ACCEPTANCE, ContractRefusal
from accord.contracts._proofs import CHANNEL_METHODS, verify_acceptance, verify_contract_signature
from accord.signing import KeySet
from accord.wire import parse_timestamp


@dataclass(frozen=True, slots=True)
class Check:
    """One verdict: ``ok`` False is a failure; ``note`` True is neither (an unsigned
    acceptance, which only the channel it came over can vouch for)."""

    what: str
    ok: bool
    detail: str = ""
    note: bool = False


def verify_document(value: Any, keys: Mapping[str, KeySet]) -> list[Check]:
    """Every check of ``value`` (an interaction document, or the operators' API's record
    of one: ``{"interaction": …}``), ``keys`` each agent's published keys."""
    if isinstance(value, dict) and "interaction" in value and "protocolVersion" not in value:
        value = value["interaction"]
    try:
        document = documents.checked(value)
    except ContractRefusal as refusal:
        what = "terms hash" if refusal.code == "terms_hash_mismatch" else "schema"
        return [Check(what, False, refusal.message)]
    checks = [
        Check("schema", True),
        Check("terms hash", True, str(document["termsHash"])),
    ]
    interaction_id = str(document["interactionId"])
    hash_ = str(document["termsHash"])
    for agent_id, acceptance in document["acceptances"].items():
        what = f"acceptance of {agent_id}"
        method = acceptance["method"]
        if method in CHANNEL_METHODS:
            checks.append(
                Check(what, True, f"{method}: unsigned, vouched for by its channel", note=True)
            )
            continue
        try:
            verify_acceptance(
                acceptance,
                interaction_id=interaction_id,
                agent_id=agent_id,
                hash_=hash_,
                keys=_keys_for(keys, agent_id),
            )
        except ContractRefusal as refusal:
            checks.append(Check(what, False, refusal.message))
        else:
            checks.append(Check(what, True, f"ed25519, key {acceptance['signature']['keyId']}"))
    created = parse_timestamp(document["createdAt"])
    for agent_id in document["contract"]["signatures"]:
        what = f"signature of {agent_id} over the terms"
        try:
            verify_contract_signature(
                document["contract"], agent_id, _keys_for(keys, agent_id), created
            )
        except ContractRefusal as refusal:
            checks.append(Check(what, False, refusal.message))
        else:
            checks.append(Check(what, True))
    return checks


def _keys_for(keys: Mapping[str, KeySet], agent_id: str) -> KeySet:
    found = keys.get(agent_id)
    if found is None:
        raise ContractRefusal(INVALID_ACCEPTANCE, f"no keys given for {agent_id}")
    return found
