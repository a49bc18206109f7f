"""Which proxy a model call goes through, from the environment as curl and the packages read
it: ``HTTPS_PROXY`` for an https:// endpoint, ``HTTP_PROXY`` for an http:// one, else
``ALL_PROXY`` (the lowercase names first); none for a host ``NO_PROXY`` names (``*``, a
host, a domain and its subdomains with or without a leading dot, an IP address or network,
each optionally with ``:port``), nor for this machine (``localhost``, a loopback address:
through a proxy it would be the proxy's, and a key would cross the network in clear).
accord's client tunnels through an http:// proxy with ``CONNECT`` (its ``user:password``,
if any, sent as ``Proxy-Authorization: Basic``); any other kind of proxy is
:class:`UnsupportedProxy`, and the adapters then use the provider's package instead."""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from accord.harness.models._endpoint import is_loopback
from accord.harness.models._http._errors import HTTPError


class UnsupportedProxy(HTTPError):
    """The environment names a proxy accord's client cannot use (not http://)."""


@dataclass(frozen=True, slots=True)
class Proxy:
    host: str
    port: int
    authorization: str | None = None  # the Proxy-Authorization header's value

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"


def proxy_for(scheme: str, host: str, port: int, environ: Mapping[str, str]) -> Proxy | None:
    """The proxy a call to ``scheme://host:port`` goes through, or None (direct)."""
    name = "https_proxy" if scheme == "https" else "http_proxy"
    url = ""
    for named in (name, "all_proxy"):
        url = environ.get(named) or environ.get(named.upper()) or ""
        if url.strip():
            name = named
            break
    if not url.strip() or bypassed(host, port, environ):
        return None
    if "://" not in url:
        url = f"http://{url}"
    parts = urlsplit(url.strip())
    if parts.scheme != "http" or not parts.hostname:
        raise UnsupportedProxy(
            f"the proxy {parts.scheme}://{parts.hostname or ''} (${name.upper()}) is not an "
            "http:// proxy"
        )
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return Proxy(parts.hostname, parts.port or 80, authorization)


def bypassed(host: str, port: int, environ: Mapping[str, str]) -> bool:
    """Whether ``NO_PROXY`` (or ``no_proxy``) says ``host:port`` is reached directly."""
    listed = environ.get("no_proxy") or environ.get("NO_PROXY") or ""
    host = host.lower().strip("[]")
    if is_loopback(host) or host.endswith(".localhost"):
        return True
    for entry in (item.strip().lower() for item in listed.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        entry_host, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        if _matches(host, entry_host):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):  # [::1]:8080
        inside, _, rest = entry[1:].partition("]")
        return inside, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    head, sep, tail = entry.rpartition(":")
    if sep and tail.isdigit() and ":" not in head:
        return head, int(tail)
    return entry, None


def _matches(host: str, entry: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:
        try:
            return address in ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
    domain = entry.lstrip(".")
    return host == domain or host.endswith("." + domain)
