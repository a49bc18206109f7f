"""The SSRF guard: which webhook URLs and addresses accord may post to.

A webhook URL comes from a client, so without a guard accord would post wherever a client
points it: its own admin ports, the internal network, the cloud metadata service. The guard
allows only http(s) and refuses every address in :data:`REFUSED` (loopback, private,
link-local, multicast, unspecified, shared/CGNAT, reserved, cloud metadata, and IPv6 forms that
embed one of those) unless the operator's allow-list admits it.

It runs twice: at registration (a best-effort early answer: literal addresses and names that
resolve right away) and at every delivery attempt, where the name is resolved again, every
address checked, and the connection made to a checked address (see
:mod:`accord.push._delivery`), so a name that changes its answer after registration (DNS
rebinding) gains nothing.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from accord.errors import AccordError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# A resolver: (host, port) -> the addresses it names. Tests inject their own.
Resolver = Callable[[str, int], Awaitable[list[str]]]


def _nets(*pairs: tuple[str, str]) -> tuple[tuple[IPNetwork, str], ...]:
    return tuple((ipaddress.ip_network(cidr), why) for cidr, why in pairs)


METADATA = _nets(
    ("169.254.169.254/32", "a cloud metadata address"),
    ("fd00:ec2::254/128", "a cloud metadata address"),
    ("100.100.100.200/32", "a cloud metadata address"),
)

# Listed explicitly rather than taken from ipaddress's is_private & co., whose coverage
# differs between Python versions. More specific entries first: the first match names it.
REFUSED: tuple[tuple[IPNetwork, str], ...] = (
    *METADATA,
    *_nets(
        ("0.0.0.0/8", "an unspecified address"),
        ("10.0.0.0/8", "a private address"),
        ("100.64.0.0/10", "a shared (CGNAT) address"),
        ("127.0.0.0/8", "a loopback address"),
        ("169.254.0.0/16", "a link-local address"),
        ("172.16.0.0/12", "a private address"),
        ("192.0.0.0/24", "a reserved address"),
        ("192.168.0.0/16", "a private address"),
        ("198.18.0.0/15", "a reserved address"),
        ("224.0.0.0/4", "a multicast address"),
        ("240.0.0.0/4", "a reserved address"),
        ("::/128", "an unspecified address"),
        ("::1/128", "a loopback address"),
        ("fc00::/7", "a private (unique local) address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
    ),
)

# IPv6 ranges that carry an IPv4 address: the embedded one is what gets reached.
_V4_IN_V6 = (
    ipaddress.ip_network("::ffff:0:0/96"),  # IPv4-mapped
    ipaddress.ip_network("::/96"),  # IPv4-compatible (deprecated)
    ipaddress.ip_network("64:ff9b::/96"),  # NAT64
)
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")


class RefusedTarget(AccordError, ValueError):
    """The URL or address may not be posted to; the message says why (and holds no secret:
    at most the scheme, host and port)."""


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    for net in _V4_IN_V6:
        if address in net:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _SIX_TO_FOUR:
        return ipaddress.IPv4Address((int(address) >> 80) & 0xFFFFFFFF)
    return None


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` is refused by default, or None when it is a public address."""
    for net, why in REFUSED:
        if address.version == net.version and address in net:
            return why
    inner = embedded_ipv4(address)
    if inner is not None:
        inner_why = refusal(inner)
        return f"{inner_why} (inside {address})" if inner_why else None
    return None


@dataclass(frozen=True, slots=True)
class Target:
    """A webhook URL taken apart: what to resolve and what to send as Host / SNI."""

    url: SplitResult
    scheme: str
    host: str  # lower case, no brackets, no trailing dot
    port: int

    @property
    def origin(self) -> str:
        """scheme://host:port, safe to log (the path may carry a secret)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def parse_target(url: str) -> Target:
    """Check the URL's form: http or https with a host. Raises RefusedTarget."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise RefusedTarget(f"not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise RefusedTarget("only http and https URLs are allowed")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise RefusedTarget("the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise RefusedTarget("credentials in the URL are not allowed; use authentication")
    return Target(parts, scheme, host, port or (443 if scheme == "https" else 80))


def loggable_origin(url: str) -> str:
    """scheme://host:port of a webhook URL, safe to log or show (its path, query and
    credentials can carry a secret); "an invalid URL" when it has none."""
    try:
        return parse_target(url).origin
    except RefusedTarget:
        return "an invalid URL"


def literal_address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None


class AddressPolicy:
    """Refused ranges, minus what the operator's allow-list admits.

    ``allow`` entries are host names (matched exactly against the URL's host, case-insensitive;
    every address such a name resolves to is then admitted) or addresses / CIDR blocks (an
    address inside one is admitted whatever name led to it). ``0.0.0.0/0`` and ``::/0`` turn
    the guard off.
    """

    def __init__(
        self,
        allow: Iterable[str] = (),
        *,
        subject: str = "webhooks",
        setting: str = "push_allow_hosts",
    ) -> None:
        # What the refusals name: who may not reach an address, and the setting admitting it
        # (remote hooks share this guard: accord.harness.hooks._remote).
        self.subject = subject
        self.setting = setting
        self.hosts: set[str] = set()
        self.networks: list[IPNetwork] = []
        for entry in allow:
            entry = entry.strip()
            if not entry:
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                self.hosts.add(entry.rstrip(".").lower())

    def host_admitted(self, host: str) -> bool:
        return host in self.hosts

    def address_refusal(self, address: IPAddress) -> str | None:
        inner = embedded_ipv4(address)
        for net in self.networks:
            for candidate in (address, inner):
                if candidate is not None and candidate.version == net.version and candidate in net:
                    return None
        return refusal(address)

    def check_addresses(self, target: Target, addresses: Sequence[str]) -> list[IPAddress]:
        """The addresses as IP objects if every one is admitted; else RefusedTarget naming the
        first refused one."""
        checked: list[IPAddress] = []
        admitted = self.host_admitted(target.host)
        for text in addresses:
            address = ipaddress.ip_address(text.split("%", 1)[0])
            why = None if admitted else self.address_refusal(address)
            if why is not None:
                named = "" if literal_address(target.host) else f"{target.host} resolves to "
                raise RefusedTarget(
                    f"{named}{address}, {why}, which {self.subject} may not reach "
                    f"(an operator can admit it with {self.setting})"
                )
            checked.append(address)
        if not checked:
            raise RefusedTarget(f"{target.host} resolves to no address")
        return checked


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (the system resolver, off the event loop)."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    seen: dict[str, None] = {}
    for _family, _type, _proto, _name, sockaddr in infos:
        seen.setdefault(str(sockaddr[0]), None)
    return list(seen)


class Guard:
    """The policy plus a resolver: answers "may accord post to this URL, and where to"."""

    def __init__(
        self,
        policy: AddressPolicy | None = None,
        resolver: Resolver = system_resolver,
        registration_timeout_s: float = 2.0,
    ) -> None:
        self.policy = policy or AddressPolicy()
        self.resolver = resolver
        self.registration_timeout_s = registration_timeout_s

    async def resolve(self, target: Target) -> list[IPAddress]:
        """Delivery time: the addresses to connect to, all checked. Raises RefusedTarget (also
        when the name does not resolve)."""
        literal = literal_address(target.host)
        if literal is not None:
            return self.policy.check_addresses(target, [str(literal)])
        try:
            addresses = await self.resolver(target.host, target.port)
        except OSError as exc:
            raise RefusedTarget(f"cannot resolve {target.host}: {exc}") from None
        return self.policy.check_addresses(target, addresses)

    def check_now(self, url: str) -> Target | None:
        """What can be checked without the network: the URL's form, a literal address, a
        loopback name. Raises RefusedTarget; returns the target when only its name's answer
        is left to check (None: nothing is)."""
        target = parse_target(url)
        literal = literal_address(target.host)
        if literal is not None:
            self.policy.check_addresses(target, [str(literal)])
            return None
        if self.policy.host_admitted(target.host):
            return None
        if target.host == "localhost" or target.host.endswith(".localhost"):
            raise RefusedTarget(
                f"{target.host} is a loopback name, which {self.policy.subject} may not reach "
                f"(an operator can admit it with {self.policy.setting})"
            )
        return target

    async def check_registration(self, url: str) -> None:
        """Registration time, best effort: the URL's form, a literal address, and the name's
        current answer. A name that does not resolve now is accepted (it may later); delivery
        checks again anyway. Raises RefusedTarget."""
        target = self.check_now(url)
        if target is None:
            return
        try:
            async with asyncio.timeout(self.registration_timeout_s):
                addresses = await self.resolver(target.host, target.port)
        except (OSError, TimeoutError):
            return
        self.policy.check_addresses(target, addresses)
