"""Finding an agent: fetch its card, pick the interface to talk to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import httpx

from accord.client._http import transport_error
from accord.client.errors import (
    InvalidResponseError,
    NoCompatibleInterfaceError,
    UnexpectedStatusError,
)
from accord.client.options import Timeouts
from accord.wire.codec import WireError, decode
from accord.wire.model import AgentCard, AgentInterface

WELL_KNOWN_PATH = "/.well-known/agent-card.json"
PROTOCOL_VERSION = "1.0"


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
    except httpx.HTTPError as exc:
        raise transport_error(exc) from exc
    if response.status_code != 200:
        raise UnexpectedStatusError(response.status_code, response.text, target)
    try:
        return decode(response.content, AgentCard)
    except WireError as exc:
        raise InvalidResponseError(f"invalid agent card at {target}: {exc}") from None


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
