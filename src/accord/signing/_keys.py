"""Agent keys: Ed25519, published as a JWKS (OKP, ``kid``), each with an optional validity
window so that a key can be rotated out without breaking what it signed while it was valid.

A key's ``kid`` is its RFC 7638 JWK thumbprint, so it names the key itself and never needs
configuring. The window travels in the JWK as ``nbf`` / ``exp`` (seconds since the epoch, the
names JWT uses for the same idea); a verifier refuses a signature dated outside it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from accord.errors import AccordError
from accord.signing._canonical import b64url, b64url_decode, canonical

MAX_PUBLISHED_KEYS = 64  # more than any rotation needs; bounds what a peer's card costs us


class InvalidKeyError(AccordError, ValueError):
    """A key file or a published key that is not an Ed25519 key accord can use."""


def generate_private_pem() -> bytes:
    """A new Ed25519 private key as unencrypted PKCS#8 PEM (what ``key_file`` holds)."""
    key = Ed25519PrivateKey.generate()
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def load_private_pem(data: bytes) -> Ed25519PrivateKey:
    """The Ed25519 private key of a PEM file; InvalidKeyError for anything else."""
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise InvalidKeyError(f"not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidKeyError(f"not an Ed25519 key (found {type(key).__name__})")
    return key


def raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def thumbprint(key: Ed25519PublicKey) -> str:
    """RFC 7638 thumbprint: SHA-256 of the required members in canonical order."""
    members = {"crv": "Ed25519", "kty": "OKP", "x": b64url(raw_public(key))}
    return b64url(hashlib.sha256(canonical(members)).digest())


@dataclass(frozen=True)
class AgentKey:
    """One key of an agent: always the public half, the private half only for our own.
    ``not_before_ms`` / ``not_after_ms`` bound when it may sign (None: unbounded)."""

    public: Ed25519PublicKey
    private: Ed25519PrivateKey | None = None
    not_before_ms: int | None = None
    not_after_ms: int | None = None

    @property
    def kid(self) -> str:
        return thumbprint(self.public)

    def valid_at(self, at_ms: int) -> bool:
        if self.not_before_ms is not None and at_ms < self.not_before_ms:
            return False
        return self.not_after_ms is None or at_ms < self.not_after_ms

    def sign(self, data: bytes) -> bytes:
        if self.private is None:
            raise InvalidKeyError(f"key {self.kid} has no private half here")
        return self.private.sign(data)

    def verifies(self, signature: bytes, data: bytes) -> bool:
        try:
            self.public.verify(signature, data)
        except InvalidSignature:
            return False
        return True

    def jwk(self) -> dict[str, Any]:
        jwk: dict[str, Any] = {
            "kty": "OKP",
            "crv": "Ed25519",
            "x": b64url(raw_public(self.public)),
            "kid": self.kid,
            "alg": "EdDSA",
            "use": "sig",
        }
        if self.not_before_ms is not None:
            jwk["nbf"] = self.not_before_ms // 1000
        if self.not_after_ms is not None:
            jwk["exp"] = self.not_after_ms // 1000
        return jwk

    @classmethod
    def from_private(
        cls,
        private: Ed25519PrivateKey,
        not_before_ms: int | None = None,
        not_after_ms: int | None = None,
    ) -> AgentKey:
        return cls(private.public_key(), private, not_before_ms, not_after_ms)


def key_from_jwk(jwk: Any) -> AgentKey:
    """The key a published JWK describes; InvalidKeyError unless it is an Ed25519 OKP key whose
    ``kid``, when given, is its thumbprint (a key cannot claim another key's id)."""
    if not isinstance(jwk, Mapping):
        raise InvalidKeyError("a JWK must be an object")
    if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
        raise InvalidKeyError("not an OKP Ed25519 key")
    if "d" in jwk:
        raise InvalidKeyError("a published key must not carry its private half")
    try:
        raw = b64url_decode(jwk.get("x", ""))
    except ValueError:
        raise InvalidKeyError("x is not base64url") from None
    if len(raw) != 32:
        raise InvalidKeyError("x is not a 32-byte Ed25519 key")
    public = Ed25519PublicKey.from_public_bytes(raw)
    key = AgentKey(
        public,
        not_before_ms=_seconds(jwk, "nbf"),
        not_after_ms=_seconds(jwk, "exp"),
    )
    kid = jwk.get("kid")
    if kid is not None and kid != key.kid:
        raise InvalidKeyError(f"kid {kid!r} is not the key's thumbprint")
    return key


def _seconds(jwk: Mapping[str, Any], name: str) -> int | None:
    value = jwk.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidKeyError(f"{name} must be a number of seconds")
    return int(value * 1000)


class KeySet:
    """An agent's keys by kid: ours (with private halves) or a peer's (from its JWKS)."""

    def __init__(self, keys: Iterable[AgentKey] = ()) -> None:
        self._keys: dict[str, AgentKey] = {}
        for key in keys:
            self._keys[key.kid] = key

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Any:
        return iter(self._keys.values())

    def get(self, kid: str) -> AgentKey | None:
        return self._keys.get(kid)

    def signing_key(self, now_ms: int) -> AgentKey | None:
        """The key to sign with now: of those valid now with a private half, the one that
        became valid last (a new key takes over as soon as its window opens)."""
        usable = [k for k in self._keys.values() if k.private is not None and k.valid_at(now_ms)]
        if not usable:
            return None
        return max(usable, key=lambda k: k.not_before_ms or 0)

    def jwks(self) -> dict[str, Any]:
        return {"keys": [key.jwk() for key in self._keys.values()]}

    @classmethod
    def from_jwks(cls, jwks: Any) -> KeySet:
        """The usable keys of a published JWKS. Keys of other types (an RSA key published for
        something else) and malformed ones are left out: they can verify nothing here."""
        if not isinstance(jwks, Mapping) or not isinstance(jwks.get("keys"), list):
            raise InvalidKeyError('a JWKS must be an object with a "keys" list')
        keys = []
        for jwk in jwks["keys"][:MAX_PUBLISHED_KEYS]:
            try:
                keys.append(key_from_jwk(jwk))
            except InvalidKeyError:
                continue
        return cls(keys)
