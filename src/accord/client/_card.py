"""Finding an agent: fetch its card, pick the interface to talk to."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx

from accord.client._errors import (
    CardSignatureError,
    GrpcPortError,
    InvalidResponseError,
    NoCompatibleInterfaceError,
    UnexpectedStatusError,
)
from accord.client._http import speaks_http2_only, transport_error
from accord.client._options import Timeouts
from accord.wire import AgentCard, AgentInterface, WireError, decode, encode

if TYPE_CHECKING:  # (the check and its crypto are imported when a card is checked)
    from accord.signing import CardCheck

WELL_KNOWN_PATH = "/.well-known/agent-card.json"
PROTOCOL_VERSION = "1.0"


def card_origin(url: str) -> str:
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.netloc.decode('ascii', 'replace')}"


def card_url(url: str) -> str:
    """The card's address for an agent's base URL (a URL already ending in .json is kept)."""
    if url.split("?", 1)[0].endswith(".json"):
        return url
    return url.rstrip("/") + WELL_KNOWN_PATH


async def fetch_card(
    http: httpx.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeouts: Timeouts | None = None,
) -> AgentCard:
    """GET the agent card from ``url`` (a base URL or the card's own URL)."""
    card, _ = await fetch_served_card(http, url, headers=headers, timeouts=timeouts)
    return card


async def fetch_served_card(
    http: httpx.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeouts: Timeouts | None = None,
) -> tuple[AgentCard, bytes]:
    """The agent card and its bytes as served (what a signature check compares)."""
    target = card_url(url)
    timeouts = timeouts or Timeouts()
    try:
        response = await http.get(
            target,
            headers={
                "Accept": "application/json",
                "A2A-Version": PROTOCOL_VERSION,
                **(headers or {}),
            },
            timeout=httpx.Timeout(timeouts.request, connect=timeouts.connect),
        )
    except httpx.RemoteProtocolError as exc:
        # Not HTTP/1.1: an HTTP/2-only server (a gRPC port) answers the request with frames.
        if await speaks_http2_only(target, timeouts.connect):
            raise GrpcPortError(card_origin(target)) from exc
        raise transport_error(exc) from exc
    except httpx.HTTPError as exc:
        raise transport_error(exc) from exc
    if response.status_code != 200:
        raise UnexpectedStatusError(response.status_code, response.text, target)
    try:
        return decode(response.content, AgentCard), response.content
    except WireError as exc:
        raise InvalidResponseError(f"invalid agent card at {target}: {exc}") from None


def check_signature(
    card: AgentCard,
    served: bytes | None = None,
    keys: Mapping[str, Any] | None = None,
) -> CardCheck:
    """Whether the card's signatures hold (A2A §8.4): checked against ``keys`` (a JWKS you
    trust) or, without them, against the keys the card publishes in accord's contract
    extension. ``served`` is the card's bytes as served, tried beside accord's rendering."""
    from accord.signing import InvalidKeyError, KeySet
    from accord.signing import _cards as cards

    alternates = []
    if served is not None:
        with contextlib.suppress(ValueError):
            raw = json.loads(served)
            if isinstance(raw, dict):
                alternates.append(raw)
    try:
        trusted = KeySet.from_jwks(keys) if keys is not None else None
    except InvalidKeyError as exc:
        raise ValueError(f"card_keys: {exc}") from None
    now_ms = time.time_ns() // 1_000_000
    return cards.verify(json.loads(encode(card)), trusted, now_ms, alternates=alternates)


def verified(card: AgentCard, check: CardCheck) -> None:
    """Refuse a card whose signature does not hold (CardSignatureError)."""
    if check.status == "unsigned":
        raise CardSignatureError(f"agent {card.name!r}: the card is not signed")
    if check.status == "invalid":
        raise CardSignatureError(
            f"agent {card.name!r}: the card's signature does not hold: {check.reason}"
        )


def _speaks_v1(interface: AgentInterface) -> bool:
    version = interface.protocol_version.strip()
    return not version or version.split(".", 1)[0] == "1"


def select_interface(
    card: AgentCard, supported: Sequence[str], force: str | None = None
) -> AgentInterface:
    """The first interface, in the card's preference order, with a binding in ``supported``.

    ``force`` names the one binding to use. Interfaces for another major protocol version
    (e.g. 0.3) are skipped.
    """
    wanted = {b.upper() for b in supported}
    if force is not None:
        if force.upper() not in wanted:
            raise NoCompatibleInterfaceError(f"this client has no {force} transport")
        wanted = {force.upper()}
    for interface in card.supported_interfaces:
        if interface.protocol_binding.upper() in wanted and _speaks_v1(interface):
            return interface
    offered = (
        ", ".join(f"{i.protocol_binding} {i.protocol_version}" for i in card.supported_interfaces)
        or "none"
    )
    asked = force or ", ".join(supported)
    raise NoCompatibleInterfaceError(
        f"agent {card.name!r} offers no A2A 1.x interface for {asked} (offered: {offered})"
    )
