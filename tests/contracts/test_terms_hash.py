"""The terms hash, exactly as OpenClasp computes it (the reference's vector)."""

from __future__ import annotations

from accord.contracts._proofs import terms_hash
from accord.contracts._schema import parse_terms
from accord.signing._canonical import canonical_hash

from .contract_helpers import VECTOR_HASH, VECTOR_HASH_SIGNATURES_DELETED, VECTOR_TERMS, terms


def test_the_reference_vector() -> None:
    assert terms_hash(VECTOR_TERMS) == VECTOR_HASH


def test_signatures_are_emptied_not_deleted() -> None:
    without = {k: v for k, v in VECTOR_TERMS.items() if k != "signatures"}
    # Deleting gives the other preimage's hash; the terms hash is the emptied one, and a
    # contract parsed without signatures gets the schema's default {} first.
    assert canonical_hash(without) == VECTOR_HASH_SIGNATURES_DELETED
    assert terms_hash(parse_terms(without)) == VECTOR_HASH


def test_signatures_do_not_change_the_terms_hash() -> None:
    signed = terms(signatures={"agent:a": {"algorithm": "Ed25519", "keyId": "k", "value": "c2ln"}})
    assert terms_hash(signed) == VECTOR_HASH


def test_key_order_and_whitespace_do_not_matter_but_every_term_does() -> None:
    reordered = dict(reversed(list(VECTOR_TERMS.items())))
    assert terms_hash(reordered) == VECTOR_HASH
    changed = [
        terms(purpose="Research a market "),
        terms(allowedActions=["browse", "purchase"]),
        terms(prohibitedActions=[]),
        terms(retentionDays=31),
        terms(deadline="2027-01-01T00:00:00Z"),
        terms(parties=["agent:b", "agent:a"]),
    ]
    assert all(terms_hash(t) != VECTOR_HASH for t in changed)


def test_an_integral_float_hashes_as_the_integer() -> None:
    # JSON Schema's integer includes 30.0; RFC 8785 writes it as 30.
    assert terms_hash(parse_terms(terms(retentionDays=30.0))) == VECTOR_HASH
