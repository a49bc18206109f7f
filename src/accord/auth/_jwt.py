"""Bearer JWT verification with PyJWT: signature, expiry (required), issuer and audience."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jwt
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from accord.auth._config import JwtConfig


class JwtVerifier:
    def __init__(self, config: JwtConfig) -> None:
        self.config = config
        key: Any = config.key
        if not config.algorithms[0].startswith("HS"):
            key = load_pem_public_key(config.key.encode())
        self._key = key

    def claims(self, token: str) -> Mapping[str, Any] | None:
        """The verified claims, or None for any token that does not verify (bad signature,
        expired, missing ``exp`` or ``sub``, wrong issuer or audience)."""
        required = ["exp", "sub"]
        if self.config.issuer:
            required.append("iss")
        if self.config.audience:
            required.append("aud")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self._key,
                algorithms=list(self.config.algorithms),
                issuer=self.config.issuer,
                audience=self.config.audience,
                leeway=self.config.leeway_s,
                options={"require": required, "verify_aud": bool(self.config.audience)},
            )
        except jwt.PyJWTError:
            return None
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            return None
        return claims
