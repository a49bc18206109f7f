"""The authentication part of the settings: ``[[principals]]`` and ``[jwt]``.

::

    [[principals]]                      # proven by an API key (header X-API-Key)
    identity = "worker-1"
    tenant = ""
    actors = ["a2a.tasks.Agent"]
    api_key = "…"                       # or api_key_env = "WORKER_1_KEY"

    [[principals]]                      # proven by a bearer JWT whose ``sub`` is the identity
    identity = "alice"
    tenant = "acme"
    actors = ["a2a.tasks.Client", "a2a.discovery.Client"]
    jwt = true

    [jwt]                               # how bearer JWTs are verified
    secret = "…"                        # HS256; or public_key / public_key_file
    algorithms = ["HS256"]
    issuer = "https://issuer.example"   # optional; checked when set
    audience = "accord"                 # optional; checked when set
    tenant_claim = "tenant"
    actors_claim = "actors"
    allow_unlisted = true               # unlisted subjects: tenant/actors from claims

Secrets are kept out of ``repr`` so they never reach a log line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accord.core import (
    ADMIN_ACTOR,
    AGENT_ACTOR,
    CLIENT_ACTOR,
    CONTRACT_OPERATOR_ACTOR,
    DISCOVERY_ACTOR,
)

KNOWN_ACTORS = frozenset(
    {CLIENT_ACTOR, AGENT_ACTOR, DISCOVERY_ACTOR, CONTRACT_OPERATOR_ACTOR, ADMIN_ACTOR}
)
DEFAULT_ACTORS = (CLIENT_ACTOR, DISCOVERY_ACTOR)
ASYMMETRIC = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "EdDSA")


@dataclass(frozen=True)
class PrincipalSpec:
    identity: str
    tenant: str = ""
    actors: tuple[str, ...] = DEFAULT_ACTORS
    api_key: str | None = field(default=None, repr=False)
    jwt: bool = False


@dataclass(frozen=True)
class JwtConfig:
    algorithms: tuple[str, ...]
    key: str = field(repr=False)  # the HMAC secret or the PEM public key
    issuer: str | None = None
    audience: str | None = None
    tenant_claim: str = "tenant"
    actors_claim: str = "actors"
    allow_unlisted: bool = True
    leeway_s: float = 0.0


@dataclass(frozen=True)
class AuthConfig:
    principals: tuple[PrincipalSpec, ...] = ()
    jwt: JwtConfig | None = None

    @property
    def configured(self) -> bool:
        return bool(self.principals) or self.jwt is not None


def _actors(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return DEFAULT_ACTORS
    if isinstance(value, str):
        value = [value]
    actors = tuple(str(a) for a in value)
    unknown = [a for a in actors if a not in KNOWN_ACTORS]
    if unknown:
        raise ValueError(f"{where}: unknown actor(s) {unknown}; known: {sorted(KNOWN_ACTORS)}")
    return actors


def _principal(raw: Mapping[str, Any], index: int) -> PrincipalSpec:
    where = f"principals[{index}]"
    allowed = {"identity", "tenant", "actors", "api_key", "api_key_env", "jwt"}
    extra = set(raw) - allowed
    if extra:
        raise ValueError(f"{where}: unknown key(s) {sorted(extra)}")
    identity = raw.get("identity")
    if not isinstance(identity, str) or not identity:
        raise ValueError(f"{where}: identity is required")
    api_key = raw.get("api_key")
    env = raw.get("api_key_env")
    if env is not None:
        api_key = os.environ.get(str(env))
        if not api_key:
            raise ValueError(f"{where}: environment variable {env} is not set")
    if api_key is not None and len(str(api_key)) < 16:
        raise ValueError(f"{where}: api_key must be at least 16 characters")
    jwt = bool(raw.get("jwt", False))
    if api_key is None and not jwt:
        raise ValueError(f"{where}: give api_key (or api_key_env) or jwt = true")
    return PrincipalSpec(
        identity=identity,
        tenant=str(raw.get("tenant", "")),
        actors=_actors(raw.get("actors"), where),
        api_key=str(api_key) if api_key is not None else None,
        jwt=jwt,
    )


def _jwt(raw: Mapping[str, Any]) -> JwtConfig:
    allowed = {
        "secret",
        "secret_env",
        "public_key",
        "public_key_file",
        "algorithms",
        "issuer",
        "audience",
        "tenant_claim",
        "actors_claim",
        "allow_unlisted",
        "leeway_s",
    }
    extra = set(raw) - allowed
    if extra:
        raise ValueError(f"jwt: unknown key(s) {sorted(extra)}")
    secret = raw.get("secret")
    if raw.get("secret_env"):
        secret = os.environ.get(str(raw["secret_env"]))
        if not secret:
            raise ValueError(f"jwt: environment variable {raw['secret_env']} is not set")
    public_key = raw.get("public_key")
    if raw.get("public_key_file"):
        public_key = Path(str(raw["public_key_file"])).read_text()
    if (secret is None) == (public_key is None):
        raise ValueError("jwt: give exactly one of secret (HS256) or public_key(_file)")
    if secret is not None:
        if len(str(secret)) < 32:
            raise ValueError("jwt: the HS256 secret must be at least 32 characters")
        algorithms: Sequence[str] = raw.get("algorithms", ["HS256"])
        if any(not a.startswith("HS") for a in algorithms):
            raise ValueError("jwt: a secret verifies HS256/HS384/HS512 only")
        key = str(secret)
    else:
        algorithms = raw.get("algorithms", ["RS256", "ES256", "EdDSA"])
        if any(a not in ASYMMETRIC for a in algorithms):
            raise ValueError(f"jwt: a public key verifies {', '.join(ASYMMETRIC)} only")
        key = str(public_key)
    return JwtConfig(
        algorithms=tuple(algorithms),
        key=key,
        issuer=raw.get("issuer"),
        audience=raw.get("audience"),
        tenant_claim=str(raw.get("tenant_claim", "tenant")),
        actors_claim=str(raw.get("actors_claim", "actors")),
        allow_unlisted=bool(raw.get("allow_unlisted", True)),
        leeway_s=float(raw.get("leeway_s", 0.0)),
    )


def parse_auth(
    principals: Sequence[Mapping[str, Any]], jwt: Mapping[str, Any] | None
) -> AuthConfig:
    """The settings' ``principals`` list and ``jwt`` table, checked; raises ValueError."""
    specs = tuple(_principal(raw, i) for i, raw in enumerate(principals))
    keys = [s.api_key for s in specs if s.api_key is not None]
    if len(keys) != len(set(keys)):
        raise ValueError("principals: two principals share an api_key")
    jwt_config = _jwt(jwt) if jwt else None
    if jwt_config is None and any(s.jwt for s in specs):
        raise ValueError("principals: jwt = true needs a [jwt] table with a secret or public key")
    return AuthConfig(principals=specs, jwt=jwt_config)
