"""Credentials: what to add to each request so the agent knows who is calling.

A provider is anything with ``async headers(card, interface) -> Mapping[str, str]``; it is asked
on every call, so a provider can refresh a token when it expires. On gRPC the same pairs are
sent as (lower-cased) metadata.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, runtime_checkable

from accord.wire import AgentCard, AgentInterface, APIKeySecurityScheme

TokenSource = str | Callable[[], str] | Callable[[], Awaitable[str]]


@runtime_checkable
class CredentialsProvider(Protocol):
    async def headers(self, card: AgentCard, interface: AgentInterface) -> Mapping[str, str]:
        """The headers to add to the next request to ``interface``."""
        ...


async def _resolve(source: TokenSource) -> str:
    if isinstance(source, str):
        return source
    value = source()
    if inspect.isawaitable(value):
        return await value
    return value


class BearerToken:
    """``Authorization: Bearer <token>``; the token may be a string or a (async) callable."""

    def __init__(self, token: TokenSource) -> None:
        self._token = token

    async def headers(self, card: AgentCard, interface: AgentInterface) -> Mapping[str, str]:
        return {"Authorization": f"Bearer {await _resolve(self._token)}"}


class ApiKey:
    """An API key in a header.

    ``header`` names the header; when it is not given, the card's first API-key security
    scheme located in a header names it, and ``X-API-Key`` is the last resort.
    """

    def __init__(self, key: TokenSource, header: str | None = None) -> None:
        self._key = key
        self._header = header

    def header_name(self, card: AgentCard) -> str:
        if self._header:
            return self._header
        for scheme in card.security_schemes.values():
            api_key = scheme.api_key_security_scheme
            if (
                isinstance(api_key, APIKeySecurityScheme)
                and api_key.location.lower() == "header"
                and api_key.name
            ):
                return api_key.name
        return "X-API-Key"

    async def headers(self, card: AgentCard, interface: AgentInterface) -> Mapping[str, str]:
        return {self.header_name(card): await _resolve(self._key)}


class StaticHeaders:
    """Fixed headers, e.g. from ``--header NAME:VALUE`` on the command line."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._headers = dict(headers)

    async def headers(self, card: AgentCard, interface: AgentInterface) -> Mapping[str, str]:
        return self._headers


class CombinedCredentials:
    """Several providers; later ones win on the same header."""

    def __init__(self, *providers: CredentialsProvider) -> None:
        self._providers = providers

    async def headers(self, card: AgentCard, interface: AgentInterface) -> Mapping[str, str]:
        out: dict[str, str] = {}
        for provider in self._providers:
            out.update(await provider.headers(card, interface))
        return out
