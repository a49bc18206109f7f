"""Authentication hook of the bindings: headers in, a Caller (or None) out.

The simple model here (static API keys and bearer tokens from configuration) is what the
extended card needs; the full principal model comes with the command surface.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from accord.core import Caller


class Authenticator(Protocol):
    @property
    def configured(self) -> bool:
        """True when requests must authenticate."""
        ...

    def authenticate(self, headers: Mapping[str, str]) -> Caller | None:
        """The caller the headers prove, or None when they prove nobody."""
        ...


@dataclass(frozen=True)
class StaticTokens:
    """Callers by API key (header ``api_key_header``) or bearer token."""

    api_keys: Mapping[str, Caller] = field(default_factory=dict)
    bearer_tokens: Mapping[str, Caller] = field(default_factory=dict)
    api_key_header: str = "x-api-key"

    @property
    def configured(self) -> bool:
        return bool(self.api_keys or self.bearer_tokens)

    def authenticate(self, headers: Mapping[str, str]) -> Caller | None:
        key = headers.get(self.api_key_header.lower())
        if key is not None:
            return _lookup(self.api_keys, key)
        authorization = headers.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and token:
            return _lookup(self.bearer_tokens, token.strip())
        return None


def _lookup(table: Mapping[str, Caller], secret: str) -> Caller | None:
    # Compare every entry in constant time so timing does not reveal a prefix match.
    found = None
    for candidate, caller in table.items():
        if hmac.compare_digest(candidate.encode(), secret.encode()):
            found = caller
    return found


class NoAuthentication:
    configured = False

    def authenticate(self, headers: Mapping[str, str]) -> Caller | None:
        return None
