"""``accord keys generate`` and ``accord contracts verify``: local commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from accord.cli._main import main
from accord.contracts._schema import TERMS_FIELDS, SchemaError, parse_terms
from accord.signing._keys import KeySet, load_private_pem

from .contract_helpers import (
    INTERACTION,
    NOW_MS,
    VECTOR_TERMS,
    accepted,
    new_key,
    proposal,
)


def test_keys_generate_writes_a_private_key_for_its_owner_only(tmp_path: Path) -> None:
    target = tmp_path / "agent.key"
    result = CliRunner().invoke(main, ["keys", "generate", str(target)])
    assert result.exit_code == 0, result.output
    jwk = json.loads(result.output)
    assert (jwk["kty"], jwk["crv"], jwk["alg"]) == ("OKP", "Ed25519", "EdDSA")
    assert "d" not in jwk
    key = load_private_pem(target.read_bytes())
    published = KeySet.from_jwks({"keys": [jwk]}).get(jwk["kid"])
    assert published is not None
    assert key.public_key().public_bytes_raw() == published.public.public_bytes_raw()
    assert target.stat().st_mode & 0o777 == 0o600
    again = CliRunner().invoke(main, ["keys", "generate", str(target)])
    assert again.exit_code == 2 and "exists (--force replaces it)" in again.output
    assert load_private_pem(target.read_bytes()).public_key().public_bytes_raw() == (
        key.public_key().public_bytes_raw()
    )  # untouched
    forced = CliRunner().invoke(main, ["keys", "generate", str(target), "--force"])
    assert forced.exit_code == 0 and json.loads(forced.output)["kid"] != jwk["kid"]


def test_verify_reads_keys_from_a_jwks_or_a_saved_card(tmp_path: Path) -> None:
    a_key, b_key = new_key(), new_key()
    document = proposal(a_key)
    document["acceptances"]["agent:b"] = accepted(document, b_key, NOW_MS)
    contract = tmp_path / "contract.json"
    contract.write_text(json.dumps(document))
    jwks = tmp_path / "a.jwks"
    jwks.write_text(json.dumps(KeySet([a_key]).jwks()))
    card = tmp_path / "b-card.json"
    card.write_text(
        json.dumps(
            {
                "name": "b",
                "capabilities": {
                    "extensions": [
                        {
                            "uri": "urn:accord:a2a:contracts:v1",
                            "params": {"agentId": "agent:b", "jwks": KeySet([b_key]).jwks()},
                        }
                    ]
                },
            }
        )
    )
    keys = ["--keys", f"agent:a={jwks}", "--keys", f"agent:b={card}"]
    result = CliRunner().invoke(main, ["contracts", "verify", str(contract), *keys, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["ok"] is True
    # Keys swapped: both acceptances fail, and the command says so.
    swapped = ["--keys", f"agent:a={card}", "--keys", f"agent:b={jwks}"]
    result = CliRunner().invoke(main, ["contracts", "verify", str(contract), *swapped])
    assert result.exit_code == 1
    assert result.output.count("FAIL acceptance of") == 2
    bad = CliRunner().invoke(main, ["contracts", "verify", str(contract), "--keys", "agent:a"])
    assert bad.exit_code == 2 and "AGENT_ID=FILE" in bad.output
    not_keys = CliRunner().invoke(
        main, ["contracts", "verify", str(contract), "--keys", f"agent:a={contract}"]
    )
    assert not_keys.exit_code == 2 and "neither a JWKS nor a card" in not_keys.output


def test_terms_template_is_a_complete_terms_file_the_schema_takes() -> None:
    result = CliRunner().invoke(main, ["contracts", "terms-template"])
    assert result.exit_code == 0, result.output
    template = json.loads(result.output)
    assert set(template) == set(TERMS_FIELDS) - {"interactionId", "parties"}
    # the proposal fills in the interaction id and the parties: then the schema takes it
    filled = {**template, "interactionId": INTERACTION, "parties": ["agent:a", "agent:b"]}
    assert parse_terms(filled) == filled


def test_a_terms_file_missing_several_fields_names_every_one() -> None:
    partial = {key: value for key, value in VECTOR_TERMS.items() if key in ("purpose", "parties")}
    with pytest.raises(SchemaError) as refused:
        parse_terms({**partial, "retentionDays": "thirty"})
    message = str(refused.value)
    # (signatures has a default: {})
    missing = [f for f in TERMS_FIELDS if f not in (*partial, "retentionDays", "signatures")]
    assert message.startswith(f"missing: {', '.join(missing)}; ")
    assert message.endswith("retentionDays: expected an integer, got a string")
    assert "more)" not in message
