"""Agent keys and signatures: Ed25519 key sets (JWKS), RFC 8785 canonical JSON, and agent
card signatures as A2A 1.0 §8.4 specifies them (docs/authentication.md). Below the client,
which verifies the cards it fetches, and the contracts feature, which signs with the same
keys."""

from accord.signing._canonical import (
    CanonicalError,
    b64url,
    b64url_decode,
    canonical,
    canonical_hash,
)
from accord.signing._cards import CardCheck, published_keys
from accord.signing._keys import (
    AgentKey,
    InvalidKeyError,
    KeySet,
    generate_private_pem,
    load_private_pem,
)

__all__ = [
    "AgentKey",
    "CanonicalError",
    "CardCheck",
    "InvalidKeyError",
    "KeySet",
    "b64url",
    "b64url_decode",
    "canonical",
    "canonical_hash",
    "generate_private_pem",
    "load_private_pem",
    "published_keys",
]
