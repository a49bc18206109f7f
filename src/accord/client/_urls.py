"""Agent URLs: checked before use, so a typo is one clear error and not an httpx traceback."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

import httpx

from accord.client._errors import InvalidURLError

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def expand_shorthand(text: str) -> str:
    """The command line's shorthand, as httpie reads it: ``:9999`` is
    ``http://localhost:9999``, ``host:port`` (or a bare host) is ``http://host:port``. A URL
    with a scheme is kept as it is."""
    text = text.strip()
    if _SCHEME.match(text):
        return text
    if text.startswith(":"):
        return "http://localhost" + text
    return "http://" + text


def check_agent_url(url: str) -> str:
    """``url`` if it is an absolute http(s) URL with a host and a valid port, else
    :class:`InvalidURLError` saying what is wrong."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # an unbalanced "[" in the host
        raise InvalidURLError(url, str(exc)) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidURLError(url, "expected an http:// or https:// URL")
    host = parts.netloc.rpartition("@")[2]
    if not host:
        raise InvalidURLError(url, "no host")
    if host.count(":") > 1 and not host.startswith("["):
        example = f"{parts.scheme}://{_bracketed(host)}"
        raise InvalidURLError(url, f"an IPv6 address goes in brackets: {example}")
    try:
        port = parts.port
    except ValueError:  # not a number, or past 65535
        port = 0
    if port == 0:
        raise InvalidURLError(url, "invalid port: expected a number from 1 to 65535")
    try:
        httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise InvalidURLError(url, str(exc)) from None
    return url


def _bracketed(host: str) -> str:
    """An unbracketed IPv6 host as it was most likely meant: ``::1:9999`` is ``[::1]:9999``
    (an address and a port), ``fe80::1`` is ``[fe80::1]``."""
    address, _, port = host.rpartition(":")
    if port.isdigit() and _is_ipv6(address):
        return f"[{address}]:{port}"
    return f"[{host}]"


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True
