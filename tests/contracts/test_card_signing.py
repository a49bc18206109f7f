"""Signed agent cards (A2A 1.0 §8.4) round-trip with the official a2a-sdk: the SDK's
verifier accepts the card accord serves, and accord's check accepts a card the SDK signs;
a tampered card, or one signed by a key outside its window, is refused by both."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import httpx
import pytest
from a2a.client.card_resolver import A2ACardResolver, parse_agent_card
from a2a.utils.signing import (
    InvalidSignaturesError,
    create_agent_card_signer,
    create_signature_verifier,
)
from cryptography.hazmat.primitives import serialization
from google.protobuf.json_format import MessageToDict
from jwt.api_jwk import PyJWK
from tests.server.server_helpers import serve_app

from accord.app._build import build_app
from accord.app._settings import Settings
from accord.client import CardSignatureError, Client
from accord.client._card import check_signature
from accord.contracts._settings import Identity
from accord.contracts._wire import CONTRACTS_URI, TRUST_URI
from accord.signing import _cards as cards
from accord.signing._canonical import b64url, b64url_decode
from accord.signing._keys import AgentKey, KeySet
from accord.wire._codec import decode
from accord.wire._model import AgentCard

from .contract_helpers import new_key

KEY = new_key()
AUTH = {
    "principals": [
        {"identity": "alice", "api_key": "alice-key-0123456789", "actors": ["a2a.tasks.Client"]}
    ]
}


def settings(key: AgentKey = KEY, **overrides: Any) -> Settings:
    identity = Identity(agent_id="agent:a", keys=KeySet([key]))
    return dataclasses.replace(Settings(store="memory://"), identity=identity, **overrides)


def sdk_verifier(jwks: dict[str, Any]) -> Any:
    """The SDK's verifier, its keys looked up by kid in ``jwks``."""
    by_kid = {jwk["kid"]: jwk for jwk in jwks["keys"]}

    def key_provider(kid: str | None, jku: str | None) -> PyJWK:
        return PyJWK(by_kid[kid])

    return create_signature_verifier(key_provider, ["EdDSA"])


async def served_card(overrides: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The card accord serves (JSON), and the same card as the SDK's resolver reads it."""
    async with serve_app(build_app(settings(**overrides))) as http:
        body = (await http.get("/.well-known/agent-card.json")).json()
        resolver = A2ACardResolver(http, "http://localhost")
        jwks = cards.published_keys(body)
        assert jwks is not None
        card = await resolver.get_agent_card(signature_verifier=sdk_verifier(jwks[1].jwks()))
    return body, card


@pytest.mark.parametrize("overrides", [{}, AUTH], ids=["open", "with-credentials"])
async def test_the_sdk_verifies_the_card_accord_serves(overrides: dict[str, Any]) -> None:
    body, card = await served_card(overrides)
    assert card.name == body["name"]
    assert body["signatures"]
    # The protected header names the algorithm and the key. With credentials the security
    # requirement lists no scopes: the SDK's form drops that empty object, so accord signs
    # its form too (a second signature, same key).
    assert len(body["signatures"]) == (2 if overrides else 1)
    for signature in body["signatures"]:
        header = json.loads(b64url_decode(signature["protected"]))
        assert header == {"alg": "EdDSA", "typ": "JOSE", "kid": KEY.kid}
    uris = [e["uri"] for e in body["capabilities"]["extensions"]]
    assert uris == [TRUST_URI, CONTRACTS_URI]
    params = body["capabilities"]["extensions"][1]["params"]
    assert params["agentId"] == "agent:a"
    assert params["jwks"]["keys"] == [KEY.jwk()]
    assert "d" not in params["jwks"]["keys"][0]  # never the private half


async def test_the_sdk_refuses_a_tampered_card() -> None:
    body, _ = await served_card(AUTH)
    tampered = {**body, "description": "A different agent."}
    verifier = sdk_verifier(cards.published_keys(body)[1].jwks())  # type: ignore[index]
    with pytest.raises(InvalidSignaturesError):
        verifier(parse_agent_card(json.loads(json.dumps(tampered))))
    card = decode(json.dumps(tampered).encode(), AgentCard)
    assert check_signature(card).status == "invalid"


async def test_accord_verifies_a_card_the_sdk_signs() -> None:
    body, _ = await served_card({})
    unsigned = {k: v for k, v in body.items() if k != "signatures"}
    sdk_card = parse_agent_card(unsigned)
    other = new_key()
    private_jwk = PyJWK.from_dict({**other.jwk(), "d": _private_d(other)}, algorithm="EdDSA")
    signer = create_agent_card_signer(
        private_jwk, {"alg": "EdDSA", "typ": "JOSE", "kid": other.kid, "jku": None}
    )
    signed = MessageToDict(signer(sdk_card))
    card = decode(json.dumps(signed).encode(), AgentCard)
    trusted = KeySet([other]).jwks()
    assert check_signature(card, json.dumps(signed).encode(), trusted).status == "valid"
    # Checked against the card's own keys (KEY's), another key's signature does not hold.
    assert check_signature(card, json.dumps(signed).encode()).status == "invalid"


def _private_d(key: AgentKey) -> str:
    assert key.private is not None
    raw = key.private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return b64url(raw)


async def test_a_key_outside_its_window_signs_nothing_and_verifies_nothing() -> None:
    retired = new_key(not_after_ms=1)  # its window closed in 1970
    async with serve_app(build_app(settings(retired))) as http:
        body = (await http.get("/.well-known/agent-card.json")).json()
    assert "signatures" not in body  # no key valid now: the card is not signed
    # A signature made with it anyway (a stolen retired key) does not hold.
    forged = {**body, "signatures": cards.sign(body, retired)}
    card = decode(json.dumps(forged).encode(), AgentCard)
    check = check_signature(card, json.dumps(forged).encode())
    assert check.status == "invalid" and "validity window" in check.reason


async def test_the_client_refuses_a_card_that_does_not_verify_when_asked() -> None:
    app = build_app(settings())
    async with serve_app(app) as http:
        body = (await http.get("/.well-known/agent-card.json")).json()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as raw:
            async with Client.connect("http://localhost", http_client=raw, verify_card=True) as c:
                assert c.card_check.status == "valid" and c.card_check.kid == KEY.kid
            # A key of our own choosing to trust: the card is not signed by it.
            stranger = KeySet([new_key()]).jwks()
            with pytest.raises(CardSignatureError, match="does not hold"):
                await Client.connect(
                    "http://localhost", http_client=raw, verify_card=True, card_keys=stranger
                )
    tampered = decode(json.dumps({**body, "name": "impostor"}).encode(), AgentCard)
    with pytest.raises(CardSignatureError, match="does not hold"):
        Client(tampered, verify_card=True)
    assert Client(tampered).card_check.status == "invalid"  # only refused when asked


async def test_an_unsigned_card_is_refused_only_when_verification_is_asked() -> None:
    async with serve_app(build_app(Settings(store="memory://"))) as http:
        body = (await http.get("/.well-known/agent-card.json")).json()
    card = decode(json.dumps(body).encode(), AgentCard)
    assert Client(card).card_check.status == "unsigned"
    with pytest.raises(CardSignatureError, match="not signed"):
        Client(card, verify_card=True)
