"""Who a request is: API key (``X-API-Key``) or bearer token (a JWT, or a static token of the
older ``bearer_tokens`` setting) in, a :class:`Caller` or None out.

Keys are compared in constant time against every configured key, so timing reveals neither
which key nor how much of one matched. The same object serves HTTP headers and gRPC metadata.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from typing import Any

from accord.auth._config import DEFAULT_ACTORS, KNOWN_ACTORS, AuthConfig, PrincipalSpec
from accord.auth._jwt import JwtVerifier
from accord.core import Caller

API_KEY_HEADER = "x-api-key"


def _digest(secret: str) -> bytes:
    # Comparing fixed-length digests keeps the comparison constant-time whatever the length.
    return hashlib.sha256(secret.encode()).digest()


def _caller(spec: PrincipalSpec) -> Caller:
    return Caller(
        identity=spec.identity,
        tenant=spec.tenant,
        actors=frozenset(spec.actors),
        authenticated=True,
    )


class PrincipalAuthenticator:
    """The :class:`~accord.server._auth.Authenticator` of configured principals."""

    def __init__(
        self,
        config: AuthConfig,
        static_bearer: Mapping[str, Caller] | None = None,
        static_keys: Mapping[str, Caller] | None = None,
    ) -> None:
        self.config = config
        self._keys: list[tuple[bytes, Caller]] = [
            (_digest(spec.api_key), _caller(spec))
            for spec in config.principals
            if spec.api_key is not None
        ]
        self._keys += [(_digest(k), c) for k, c in (static_keys or {}).items()]
        self._bearer: list[tuple[bytes, Caller]] = [
            (_digest(k), c) for k, c in (static_bearer or {}).items()
        ]
        self._by_subject = {s.identity: _caller(s) for s in config.principals if s.jwt}
        self._jwt = JwtVerifier(config.jwt) if config.jwt is not None else None

    @property
    def configured(self) -> bool:
        return bool(self._keys or self._bearer or self._jwt is not None)

    @property
    def has_api_keys(self) -> bool:
        return bool(self._keys)

    @property
    def has_bearer(self) -> bool:
        return bool(self._bearer) or self._jwt is not None

    def authenticate(self, headers: Mapping[str, str]) -> Caller | None:
        key = headers.get(API_KEY_HEADER)
        if key is not None:
            return _match(self._keys, key.strip())
        scheme, _, token = headers.get("authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        static = _match(self._bearer, token)
        if static is not None:
            return static
        return self._from_jwt(token) if self._jwt is not None else None

    def _from_jwt(self, token: str) -> Caller | None:
        assert self._jwt is not None
        claims = self._jwt.claims(token)
        if claims is None:
            return None
        subject = str(claims["sub"])
        listed = self._by_subject.get(subject)
        if listed is not None:
            return listed  # configuration decides tenant and actors, not the token
        config = self._jwt.config
        if not config.allow_unlisted:
            return None
        tenant = claims.get(config.tenant_claim, "")
        actors = _claim_actors(claims.get(config.actors_claim))
        if not isinstance(tenant, str) or actors is None:
            return None
        return Caller(identity=subject, tenant=tenant, actors=actors, authenticated=True)


def _claim_actors(value: Any) -> frozenset[str] | None:
    """Actors from a claim (a list, or a space-separated string like OAuth scopes); the
    client actors when absent; None when it names an unknown actor."""
    if value is None:
        return frozenset(DEFAULT_ACTORS)
    items = value.split() if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        return None
    return frozenset(i for i in items if i in KNOWN_ACTORS)


def _match(table: list[tuple[bytes, Caller]], secret: str) -> Caller | None:
    digest = _digest(secret)
    found = None
    for candidate, caller in table:
        if hmac.compare_digest(candidate, digest):
            found = caller
    return found


def authenticate_metadata(
    authenticator: Any, metadata: Iterable[tuple[str, str | bytes]]
) -> Caller | None:
    """The caller gRPC invocation metadata proves (keys are lower-case there too)."""
    headers: dict[str, str] = {}
    for key, value in metadata:
        if key.endswith("-bin"):
            continue
        headers[key.lower()] = value.decode("latin-1") if isinstance(value, bytes) else value
    result: Caller | None = authenticator.authenticate(headers)
    return result
