"""Acceptances that are proven: an ed25519 acceptance verifies only with the signer's key
valid at acceptedAt, over a statement naming this interaction, agent, hash, time and key. A
tampered term, a forged or replayed acceptance, or one by a rotated-out key is refused; so
is a document whose hash does not match its terms."""

from __future__ import annotations

import copy

import pytest

from accord.contracts import _documents as documents
from accord.contracts._errors import (
    INVALID_ACCEPTANCE,
    INVALID_SIGNATURE,
    TERMS_HASH_MISMATCH,
    ContractRefusal,
)
from accord.contracts._proofs import (
    acceptance_payload,
    channel_acceptance,
    sign_contract,
    signed_acceptance,
    terms_hash,
    verify_acceptance,
    verify_contract_signature,
)
from accord.contracts._verify import verify_document
from accord.signing._canonical import b64url, b64url_decode
from accord.signing._keys import KeySet
from accord.wire._time import format_timestamp

from .contract_helpers import HOUR_MS, NOW_MS, accepted, new_key, proposal, public, terms

A_KEY = new_key()
B_KEY = new_key()


def check(acceptance: dict, document: dict, keys: KeySet | None, agent: str = "agent:a") -> None:
    verify_acceptance(
        acceptance,
        interaction_id=document["interactionId"],
        agent_id=agent,
        hash_=document["termsHash"],
        keys=keys,
    )


def test_a_signed_acceptance_verifies_with_the_published_key() -> None:
    document = proposal(A_KEY)
    acceptance = document["acceptances"]["agent:a"]
    assert acceptance["method"] == "ed25519"
    assert acceptance["signature"]["keyId"] == A_KEY.kid
    check(acceptance, document, public(A_KEY))


def test_the_signature_covers_a_domain_separated_statement() -> None:
    document = proposal(A_KEY)
    acceptance = document["acceptances"]["agent:a"]
    statement = acceptance_payload(
        document["interactionId"], "agent:a", document["termsHash"],
        acceptance["acceptedAt"], A_KEY.kid,
    )  # fmt: skip
    assert b'"type":"accord.contract-acceptance/v1"' in statement
    assert A_KEY.verifies(b64url_decode(acceptance["signature"]["value"]), statement)


def test_a_forged_acceptance_is_refused() -> None:
    document = proposal(A_KEY)
    acceptance = document["acceptances"]["agent:a"]
    # Signed by another key that claims agent:a's key id.
    forged = copy.deepcopy(acceptance)
    statement = acceptance_payload(
        document["interactionId"], "agent:a", document["termsHash"],
        acceptance["acceptedAt"], A_KEY.kid,
    )  # fmt: skip
    forged["signature"]["value"] = b64url(B_KEY.sign(statement))
    with pytest.raises(ContractRefusal, match="does not verify") as refused:
        check(forged, document, public(A_KEY))
    assert refused.value.code == INVALID_ACCEPTANCE
    # A flipped bit, a moved acceptedAt, an unknown key: all refused.
    flipped = copy.deepcopy(acceptance)
    raw = bytearray(b64url_decode(flipped["signature"]["value"]))
    raw[0] ^= 1
    flipped["signature"]["value"] = b64url(bytes(raw))
    moved = {**acceptance, "acceptedAt": format_timestamp(NOW_MS + 1)}
    for bad in (flipped, moved):
        with pytest.raises(ContractRefusal, match="does not verify"):
            check(bad, document, public(A_KEY))
    with pytest.raises(ContractRefusal, match="not one the agent publishes"):
        check(acceptance, document, public(B_KEY))
    # An acceptance filed under agent:a by agent:b's key is not agent:a's.
    with pytest.raises(ContractRefusal, match="not one the agent publishes"):
        check(accepted(document, B_KEY, NOW_MS) | {"agentId": "agent:a"}, document, public(A_KEY))


def test_an_acceptance_cannot_be_replayed_onto_another_interaction() -> None:
    first = proposal(A_KEY)
    second = proposal(A_KEY, contract=terms(interactionId="22222222-2222-4222-8222-222222222222"))
    # Same terms, same agent, same time: only the interaction differs.
    assert first["termsHash"] != second["termsHash"]  # (the id is part of the terms)
    replayed = copy.deepcopy(first["acceptances"]["agent:a"])
    replayed["termsHash"] = second["termsHash"]
    with pytest.raises(ContractRefusal, match="does not verify"):
        check(replayed, second, public(A_KEY))


def test_an_acceptance_by_a_rotated_out_key_is_refused() -> None:
    retired = new_key(not_before_ms=NOW_MS - 48 * HOUR_MS, not_after_ms=NOW_MS - HOUR_MS)
    current = new_key(not_before_ms=NOW_MS - HOUR_MS)
    published = public(retired, current)
    document = proposal(current)
    check(document["acceptances"]["agent:a"], document, published)
    # Signed now with the key whose window closed an hour ago: refused.
    late = signed_acceptance(
        document["interactionId"], "agent:a", document["termsHash"],
        format_timestamp(NOW_MS), retired,
    )  # fmt: skip
    with pytest.raises(ContractRefusal, match="not valid at the time") as refused:
        check(late, document, published)
    assert refused.value.code == INVALID_ACCEPTANCE
    # While its window was open, the same key's acceptance holds (old contracts stay proven).
    earlier = signed_acceptance(
        document["interactionId"], "agent:a", document["termsHash"],
        format_timestamp(NOW_MS - 2 * HOUR_MS), retired,
    )  # fmt: skip
    check(earlier, document, published)


def test_the_signing_key_is_the_newest_valid_one() -> None:
    old = new_key(not_after_ms=NOW_MS + HOUR_MS)
    new = new_key(not_before_ms=NOW_MS)
    keys = KeySet([old, new])
    assert keys.signing_key(NOW_MS - 1) is old
    assert keys.signing_key(NOW_MS) is new
    assert keys.signing_key(NOW_MS + 2 * HOUR_MS) is new
    windowed = public(old, new).jwks()["keys"]
    assert {"exp"} <= set(windowed[0]) and {"nbf"} <= set(windowed[1])


def test_a_published_key_cannot_claim_another_keys_id() -> None:
    jwk = public(A_KEY).jwks()["keys"][0] | {"kid": B_KEY.kid}
    assert len(KeySet.from_jwks({"keys": [jwk]})) == 0


def test_an_unsigned_acceptance_holds_only_when_its_agent_sent_it() -> None:
    document = proposal(A_KEY)
    acceptance = channel_acceptance("agent:a", document["termsHash"], format_timestamp(NOW_MS))
    arguments = {
        "interaction_id": document["interactionId"],
        "agent_id": "agent:a",
        "hash_": document["termsHash"],
        "keys": None,
    }
    verify_acceptance(acceptance, vouched_by="agent:a", **arguments)
    for sender in ("agent:b", None):
        with pytest.raises(ContractRefusal, match="unsigned and did not come from"):
            verify_acceptance(acceptance, vouched_by=sender, **arguments)


def test_a_tampered_term_breaks_the_hash() -> None:
    document = proposal(A_KEY)
    tampered = copy.deepcopy(document)
    tampered["contract"]["allowedActions"].append("purchase")
    with pytest.raises(ContractRefusal) as refused:
        documents.checked(tampered)
    assert refused.value.code == TERMS_HASH_MISMATCH
    # Re-hashing the tampered terms does not help: the acceptance was of the other hash.
    tampered["termsHash"] = terms_hash(tampered["contract"])
    with pytest.raises(ContractRefusal, match="not the terms' hash"):
        documents.checked(tampered)
    tampered["acceptances"]["agent:a"]["termsHash"] = tampered["termsHash"]
    documents.checked(tampered)  # consistent now, but the signature is of the old terms
    with pytest.raises(ContractRefusal, match="does not verify"):
        check(tampered["acceptances"]["agent:a"], tampered, public(A_KEY))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["contract"].update(interactionId="22222222-2222-4222-8222-222222222222"),
         "differs from interactionId"),
        (lambda d: d["contract"].update(parties=["agent:b", "agent:a"]), "contract.parties"),
        (lambda d: d.update(responderAgentId="agent:a"), "another agent"),
        (lambda d: d["acceptances"].update({"agent:c": d["acceptances"]["agent:a"]}),
         "is not a party's"),
    ],
)  # fmt: skip
def test_a_document_that_contradicts_itself_is_refused(change, message: str) -> None:  # type: ignore[no-untyped-def]
    document = copy.deepcopy(proposal(A_KEY))
    change(document)
    with pytest.raises(ContractRefusal, match=message):
        documents.checked(document)


def test_party_signatures_over_the_terms() -> None:
    contract = terms()
    contract["signatures"]["agent:a"] = sign_contract(contract, A_KEY)
    verify_contract_signature(contract, "agent:a", public(A_KEY), NOW_MS)
    with pytest.raises(ContractRefusal) as refused:
        verify_contract_signature(
            {**contract, "purpose": "something else"}, "agent:a", public(A_KEY), NOW_MS
        )
    assert refused.value.code == INVALID_SIGNATURE
    with pytest.raises(ContractRefusal, match="has not signed"):
        verify_contract_signature(contract, "agent:b", public(B_KEY), NOW_MS)


def test_verify_checks_everything_offline() -> None:
    document = proposal(A_KEY)
    document["acceptances"]["agent:b"] = accepted(document, B_KEY, NOW_MS + 1000)
    keys = {"agent:a": public(A_KEY), "agent:b": public(B_KEY)}
    checks = verify_document(document, keys)
    assert [c.ok for c in checks] == [True] * 4
    assert [c.what for c in checks] == [
        "schema", "terms hash", "acceptance of agent:a", "acceptance of agent:b",
    ]  # fmt: skip
    # The operators' API's record shape is taken too; a missing key fails that check only.
    checks = verify_document({"interaction": document, "version": 2}, {"agent:a": keys["agent:a"]})
    assert [c.ok for c in checks] == [True, True, True, False]
    assert "no keys given for agent:b" in checks[-1].detail
    tampered = copy.deepcopy(document)
    tampered["contract"]["retentionDays"] = 3650
    assert [(c.what, c.ok) for c in verify_document(tampered, keys)] == [("terms hash", False)]
