"""What a web browser may do with the server: the Host and Origin checks, and CORS.

A browser runs pages from every site it visits, and it reaches loopback too, so "loopback only"
alone does not keep those pages from a server without credentials (open mode):

- DNS rebinding: a page whose name is made to resolve to 127.0.0.1 calls the server as its own
  origin and reads the answers. Open mode answers only a ``Host`` that is a loopback name or
  address (``localhost``, 127.0.0.0/8, ``[::1]``, any port), the host of ``public_url``, or one
  listed in ``allowed_hosts``; the page's ``Host`` is its own name.
- Cross-site requests: a request whose ``Origin`` is neither the server's own nor listed in
  ``cors_origins`` is refused, in every mode. A browser sends ``Origin`` with every POST and
  every CORS request; other clients send none and are not affected. (With credentials
  configured a page could only use credentials it was given, but a server that also admits
  anonymous callers, ``require_auth = false``, would otherwise be drivable by any page its
  users visit.) Every POST must also declare a JSON body (accord.server._http), which a browser
  sends cross-site only after a preflight.
- CORS is off unless ``cors_origins`` lists origins: then their preflights are granted and the
  answers carry ``Access-Control-Allow-Origin``. ``"*"`` (any origin) is refused in open mode,
  where it would hand the server to every page; credentials mode (cookies, HTTP auth) is never
  granted: accord's credentials are headers a page must be given.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

# The request headers a page may send: the ones accord reads. ``cors_headers`` adds more.
CORS_HEADERS = (
    "authorization",
    "content-type",
    "x-api-key",
    "a2a-version",
    "a2a-extensions",
    "last-event-id",
    "x-participant-id",  # the harness's participant assertion (open mode)
)
CORS_METHODS = ("GET", "POST", "DELETE")  # every method accord serves
EXPOSED_HEADERS = b"A2A-Extensions, WWW-Authenticate"
ANY_ORIGIN = "*"

Headers = list[tuple[bytes, bytes]]


def host_name(host: str) -> str:
    """The name or address of a ``Host`` value, lower-cased, without port or brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.partition(":")[0].rstrip(".")


def is_loopback(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _origin(value: str, where: str) -> str:
    """A configured origin, checked: ``scheme://host[:port]`` and nothing else."""
    parts = urlsplit(value.strip())
    if (
        parts.scheme not in ("http", "https")
        or not parts.netloc
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or "@" in parts.netloc
    ):
        raise ValueError(
            f"{where}: {value!r} is not an origin; write scheme://host[:port], "
            "e.g. https://app.example"
        )
    return f"{parts.scheme}://{parts.netloc.lower()}"


@dataclass(frozen=True)
class BrowserPolicy:
    check_host: bool = True  # open mode: only loopback (and listed) Host values are answered
    allowed_hosts: frozenset[str] = frozenset()  # names or addresses, lower-case, no port
    own_origins: frozenset[str] = frozenset()  # public_url's origin: the server's own
    cors_origins: frozenset[str] = frozenset()  # exact origins, or "*"
    cors_headers: tuple[str, ...] = CORS_HEADERS
    cors_max_age_s: int = 600
    # Host values already admitted: a client sends the same one every time, and parsing it
    # (ipaddress) costs more than the rest of the checks. Bounded: any number of loopback
    # addresses and ports could be named.
    _admitted: set[str] = field(default_factory=set, init=False, compare=False, repr=False)

    @classmethod
    def configure(
        cls,
        *,
        open_mode: bool,
        public_url: str = "",
        allowed_hosts: Iterable[str] = (),
        cors_origins: Iterable[str] = (),
        cors_headers: Iterable[str] = (),
        cors_max_age_s: int = 600,
    ) -> BrowserPolicy:
        """The policy for settings; ValueError names a setting that does not make sense."""
        origins = frozenset(
            ANY_ORIGIN if o.strip() == ANY_ORIGIN else _origin(o, "cors_origins")
            for o in cors_origins
        )
        if open_mode and ANY_ORIGIN in origins:
            raise ValueError(
                'cors_origins: "*" would let every web page drive a server without '
                "credentials; list the origins, or configure authentication"
            )
        hosts = {host_name(h) for h in allowed_hosts if h.strip()}
        own: set[str] = set()
        if public_url:
            parts = urlsplit(public_url)
            if parts.hostname:
                hosts.add(host_name(parts.hostname))
                own.add(f"{parts.scheme}://{parts.netloc.lower()}")
        extra = tuple(h.strip().lower() for h in cors_headers if h.strip())
        return cls(
            check_host=open_mode,
            allowed_hosts=frozenset(hosts),
            own_origins=frozenset(own),
            cors_origins=origins,
            cors_headers=tuple(dict.fromkeys((*CORS_HEADERS, *extra))),
            cors_max_age_s=cors_max_age_s,
        )

    # --- every request -----------------------------------------------------------------------

    def refusal(self, headers: Mapping[str, str]) -> str | None:
        """Why a request is refused before anything reads it, or None."""
        host = headers.get("host")
        refused = self._host_refusal(host)
        if refused is not None:
            return refused
        origin = headers.get("origin")
        if origin is not None and not self._same_origin(origin, host) and not self.allows(origin):
            return (
                f"Origin {origin!r} may not call this server: a page on another site needs "
                "its origin in cors_origins"
            )
        return None

    def _host_refusal(self, host: str | None) -> str | None:
        if not self.check_host or host is None or host in self._admitted:  # no Host: no browser
            return None
        name = host_name(host)
        if is_loopback(name) or name in self.allowed_hosts:
            if len(self._admitted) < 64:
                self._admitted.add(host)
            return None
        return (
            f"Host {host!r} is not a loopback name or address, and a server without "
            "credentials answers no other (list it in allowed_hosts, or configure "
            "authentication)"
        )

    def allows(self, origin: str) -> bool:
        """A cross-origin page the CORS settings admit."""
        return ANY_ORIGIN in self.cors_origins or origin.lower() in self.cors_origins

    def _same_origin(self, origin: str, host: str | None) -> bool:
        lowered = origin.lower()
        if lowered in self.own_origins:
            return True
        _, sep, netloc = lowered.partition("://")
        return bool(sep) and host is not None and netloc == host.strip().lower()

    def response_headers(self, origin: str) -> Headers:
        """What an answer to an admitted cross-origin page carries."""
        allowed = b"*" if ANY_ORIGIN in self.cors_origins else origin.encode("latin-1")
        return [
            (b"access-control-allow-origin", allowed),
            (b"access-control-expose-headers", EXPOSED_HEADERS),
            (b"vary", b"Origin"),
        ]

    # --- preflights --------------------------------------------------------------------------

    def preflight(self, headers: Mapping[str, str]) -> Headers | str:
        """The headers granting a preflight, or why it is refused."""
        refused = self._host_refusal(headers.get("host"))
        if refused is not None:
            return refused
        origin = headers.get("origin", "")
        if not self.allows(origin):
            return f"Origin {origin!r} is not in cors_origins: no cross-origin calls from it"
        method = headers.get("access-control-request-method", "").strip().upper()
        if method not in CORS_METHODS:
            return f"method {method!r} is not served; use {', '.join(CORS_METHODS)}"
        requested = headers.get("access-control-request-headers", "")
        unlisted = [
            name
            for name in (n.strip().lower() for n in requested.split(","))
            if name and name not in self.cors_headers
        ]
        if unlisted:
            return f"header(s) {', '.join(unlisted)} may not be sent; add them to cors_headers"
        return [
            *self.response_headers(origin),
            (b"access-control-allow-methods", ", ".join(CORS_METHODS).encode()),
            (b"access-control-allow-headers", ", ".join(self.cors_headers).encode()),
            (b"access-control-max-age", str(self.cors_max_age_s).encode()),
        ]
