"""Principals from configuration: API keys, bearer JWTs (HS256 secret; RS256, ES256 and EdDSA
public keys), expiry, claims to tenant and actors, and configuration errors."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from accord.auth import PrincipalAuthenticator, authenticate_metadata, parse_auth
from accord.core._caller import AGENT_ACTOR, CLIENT_ACTOR, DISCOVERY_ACTOR

SECRET = "a-test-secret-that-is-long-enough-0123456789"
KEY = "worker-key-0123456789abcdef"


def authenticator(principals: list[dict[str, Any]], jwt_table: dict[str, Any] | None = None):
    return PrincipalAuthenticator(parse_auth(principals, jwt_table))


def token(claims: dict[str, Any], key: Any = SECRET, algorithm: str = "HS256") -> str:
    return jwt.encode({"exp": int(time.time()) + 60, **claims}, key, algorithm=algorithm)


def bearer(value: str) -> dict[str, str]:
    return {"authorization": f"Bearer {value}"}


def test_api_key_principal() -> None:
    auth = authenticator(
        [{"identity": "w1", "tenant": "acme", "actors": [AGENT_ACTOR], "api_key": KEY}]
    )
    assert auth.configured and auth.has_api_keys and not auth.has_bearer
    caller = auth.authenticate({"x-api-key": KEY})
    assert caller is not None
    assert (caller.identity, caller.tenant, caller.actors, caller.authenticated) == (
        "w1",
        "acme",
        frozenset({AGENT_ACTOR}),
        True,
    )
    assert auth.authenticate({"x-api-key": KEY + "x"}) is None
    assert auth.authenticate({"x-api-key": KEY[:-1]}) is None
    assert auth.authenticate({}) is None
    assert "worker-key" not in repr(auth.config)  # secrets stay out of logs


def test_hs256_jwt_with_claims_and_with_a_listed_principal() -> None:
    auth = authenticator(
        [{"identity": "alice", "tenant": "acme", "actors": [CLIENT_ACTOR], "jwt": True}],
        {"secret": SECRET},
    )
    listed = auth.authenticate(bearer(token({"sub": "alice", "tenant": "evil"})))
    assert listed is not None and listed.tenant == "acme"  # configuration wins over claims
    assert listed.actors == frozenset({CLIENT_ACTOR})

    unlisted = auth.authenticate(
        bearer(token({"sub": "bob", "tenant": "t2", "actors": "a2a.tasks.Agent"}))
    )
    assert unlisted is not None
    assert (unlisted.identity, unlisted.tenant, unlisted.actors) == (
        "bob",
        "t2",
        frozenset({AGENT_ACTOR}),
    )
    default = auth.authenticate(bearer(token({"sub": "carol"})))
    assert default is not None and default.actors == frozenset({CLIENT_ACTOR, DISCOVERY_ACTOR})


@pytest.mark.parametrize(
    "claims",
    [
        {"sub": "bob", "exp": int(time.time()) - 10},  # expired
        {"sub": ""},
        {"tenant": "t"},  # no subject
    ],
)
def test_jwts_that_do_not_verify(claims: dict[str, Any]) -> None:
    auth = authenticator([], {"secret": SECRET})
    assert auth.authenticate(bearer(token(claims))) is None


def test_jwt_signature_expiry_issuer_audience() -> None:
    auth = authenticator([], {"secret": SECRET, "issuer": "https://issuer", "audience": "accord"})
    good = {"sub": "bob", "iss": "https://issuer", "aud": "accord"}
    assert auth.authenticate(bearer(token(good))) is not None
    assert auth.authenticate(bearer(token({**good, "aud": "other"}))) is None
    assert auth.authenticate(bearer(token({**good, "iss": "https://evil"}))) is None
    assert auth.authenticate(bearer(token(good, "another-secret-that-is-long-enough-000"))) is None
    no_exp = jwt.encode(good, SECRET, algorithm="HS256")
    assert auth.authenticate(bearer(no_exp)) is None  # expiry is required
    assert auth.authenticate(bearer(token(good)[:-2])) is None
    unsigned = jwt.encode({**good, "exp": int(time.time()) + 60}, None, algorithm="none")
    assert auth.authenticate(bearer(unsigned)) is None


def test_unlisted_subjects_can_be_refused() -> None:
    auth = authenticator(
        [{"identity": "alice", "jwt": True}], {"secret": SECRET, "allow_unlisted": False}
    )
    assert auth.authenticate(bearer(token({"sub": "alice"}))) is not None
    assert auth.authenticate(bearer(token({"sub": "mallory"}))) is None


def _pem(public_key: Any) -> str:
    return public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


@pytest.mark.parametrize(
    ("algorithm", "private"),
    [
        ("RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048)),
        ("ES256", ec.generate_private_key(ec.SECP256R1())),
        ("EdDSA", ed25519.Ed25519PrivateKey.generate()),
    ],
)
def test_public_key_jwts(algorithm: str, private: Any) -> None:
    auth = authenticator([], {"public_key": _pem(private.public_key()), "algorithms": [algorithm]})
    caller = auth.authenticate(bearer(token({"sub": "svc", "tenant": "t"}, private, algorithm)))
    assert caller is not None and caller.identity == "svc" and caller.tenant == "t"
    # an HS256 token signed with the public key text must not pass (algorithm confusion)
    forged = token({"sub": "svc"}, SECRET, "HS256")
    assert auth.authenticate(bearer(forged)) is None


def test_grpc_metadata_goes_through_the_same_authenticator() -> None:
    auth = authenticator([{"identity": "w", "actors": [AGENT_ACTOR], "api_key": KEY}])
    caller = authenticate_metadata(auth, [("x-api-key", KEY), ("trace-bin", b"\x00")])
    assert caller is not None and caller.identity == "w"
    assert authenticate_metadata(auth, [("x-api-key", "nope-nope-nope-nope")]) is None


@pytest.mark.parametrize(
    ("principals", "jwt_table", "words"),
    [
        ([{"tenant": "t", "api_key": KEY}], None, "identity is required"),
        ([{"identity": "x", "api_key": "short"}], None, "at least 16"),
        ([{"identity": "x"}], None, "api_key"),
        ([{"identity": "x", "api_key": KEY, "actors": ["root"]}], None, "unknown actor"),
        ([{"identity": "x", "jwt": True}], None, "needs a [jwt] table"),
        (
            [{"identity": "a", "api_key": KEY}, {"identity": "b", "api_key": KEY}],
            None,
            "share an api_key",
        ),
        ([], {"secret": "short"}, "at least 32"),
        ([], {"secret": SECRET, "public_key": "x"}, "exactly one"),
        ([], {"secret": SECRET, "algorithms": ["RS256"]}, "HS256"),
        ([{"identity": "x", "api_key": KEY, "colour": "red"}], None, "unknown key"),
    ],
)
def test_configuration_errors(
    principals: list[dict[str, Any]], jwt_table: dict[str, Any] | None, words: str
) -> None:
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        parse_auth(principals, jwt_table)
