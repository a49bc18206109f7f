"""One webhook POST: the request a config asks for, sent to an address the guard checked.

The connection goes to the checked IP address (the URL is rewritten to it) while the request
keeps the original name as its ``Host`` header and, for https, as the TLS server name (SNI and
certificate check): what was checked is what is reached, even if the name's DNS answer changes
between the check and the connect. Redirects are never followed (a 3xx is a failed attempt),
environment proxies are ignored (they would reach addresses the guard never saw), and the
response body is not read.

Requests go straight to an httpx transport, not through an ``httpx.AsyncClient``: the client
logs every request's full URL at INFO, and a webhook's path or query may hold a secret.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import urlunsplit

import httpx

from accord.errors import AccordError
from accord.push._headers import SENDABLE, unsendable
from accord.push._ssrf import Guard, IPAddress, RefusedTarget, Target, parse_target
from accord.telemetry import _tracing as tracing
from accord.wire import UNSET, TaskPushNotificationConfig

CONTENT_TYPE = "application/a2a+json"
EVENT_ID_HEADER = "X-A2A-Event-Id"
TOKEN_HEADER = "X-A2A-Notification-Token"


class DeliveryError(AccordError):
    """A failed attempt. The message is safe to log: no credentials, token or URL path.
    ``permanent`` failures (a refused target) are not worth retrying as they are."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


def request_headers(config: TaskPushNotificationConfig, event_id: str) -> dict[str, str]:
    headers = {"Content-Type": CONTENT_TYPE, EVENT_ID_HEADER: event_id}
    tracing.inject(headers)  # the delivery's span (tracing on): the receiver joins its trace
    auth = config.authentication
    if auth is not UNSET:
        headers["Authorization"] = f"{auth.scheme} {auth.credentials}".strip()
    if config.token:
        headers[TOKEN_HEADER] = config.token
    return headers


def pinned_url(target: Target, address: IPAddress) -> str:
    host = f"[{address}]" if address.version == 6 else str(address)
    parts = target.url
    return urlunsplit((target.scheme, f"{host}:{target.port}", parts.path or "/", parts.query, ""))


@dataclass(slots=True)
class _Pooled:
    transport: httpx.AsyncHTTPTransport
    users: int = 0


class Sender:
    """Posts notifications. Keeps one connection pool per webhook host name (a pool shared
    between names could reuse a TLS connection verified for another name), at most
    ``max_pools`` of them, least recently used closed first."""

    def __init__(
        self,
        guard: Guard,
        timeout_s: float = 10.0,
        max_pools: int = 64,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self.guard = guard
        self.timeout_s = timeout_s
        self.max_pools = max_pools
        self.verify = verify  # how https webhooks' certificates are checked (default: certifi)
        self._pools: OrderedDict[str, _Pooled] = OrderedDict()
        self._closing: set[asyncio.Task[None]] = set()
        self._timeouts = {
            "connect": timeout_s,
            "read": timeout_s,
            "write": timeout_s,
            "pool": timeout_s,
        }

    async def send(self, config: TaskPushNotificationConfig, event_id: str, body: bytes) -> None:
        """One attempt; returns on a 2xx answer, raises DeliveryError otherwise."""
        field = unsendable(config)
        if field is not None:  # stored before registration checked it: it never will be sent
            raise DeliveryError(
                f"the config's {field} is not {SENDABLE}, so no HTTP header can carry it; "
                "re-create the config",
                permanent=True,
            )
        try:
            target = parse_target(config.url)
            addresses = await self.guard.resolve(target)
        except RefusedTarget as exc:
            raise DeliveryError(f"refused: {exc}", permanent=True) from None
        headers = request_headers(config, event_id)
        netloc = target.url.netloc.rsplit("@", 1)[-1]
        headers["Host"] = netloc
        pooled = self._acquire(target.host)
        last = ""
        try:
            for address in addresses:  # each one checked; the next if one cannot be reached
                try:
                    status = await self._post(pooled.transport, target, address, headers, body)
                except httpx.ConnectError as exc:
                    last = _describe(exc)
                    continue
                if 200 <= status < 300:
                    return
                note = " (redirects are not followed)" if 300 <= status < 400 else ""
                raise DeliveryError(f"{target.origin} answered HTTP {status}{note}")
            raise DeliveryError(f"cannot connect to {target.origin}: {last}")
        finally:
            self._release(target.host, pooled)

    async def _post(
        self,
        transport: httpx.AsyncHTTPTransport,
        target: Target,
        address: IPAddress,
        headers: dict[str, str],
        body: bytes,
    ) -> int:
        extensions: dict[str, object] = {"timeout": self._timeouts}
        if target.scheme == "https":
            extensions["sni_hostname"] = target.host
        request = httpx.Request(
            "POST",
            pinned_url(target, address),
            headers=headers,
            content=body,
            extensions=extensions,
        )
        try:
            response = await transport.handle_async_request(request)
            await response.aclose()  # the body is not wanted
            return response.status_code
        except httpx.ConnectError:
            raise
        except httpx.TimeoutException:
            raise DeliveryError(f"{target.origin} timed out after {self.timeout_s:g} s") from None
        except httpx.LocalProtocolError as exc:
            # Its text quotes the offending header, whose value may be the secret.
            raise DeliveryError(
                f"{target.origin}: the request could not be sent ({type(exc).__name__})"
            ) from None
        except httpx.HTTPError as exc:
            raise DeliveryError(f"{target.origin}: {_describe(exc)}") from None

    def _acquire(self, host: str) -> _Pooled:
        pooled = self._pools.get(host)
        if pooled is None:
            pooled = self._pools[host] = _Pooled(httpx.AsyncHTTPTransport(verify=self.verify))
        self._pools.move_to_end(host)
        pooled.users += 1
        self._evict()
        return pooled

    def _release(self, host: str, pooled: _Pooled) -> None:
        pooled.users -= 1
        if self._pools.get(host) is not pooled and pooled.users == 0:
            self._close_later(pooled.transport)  # evicted while in use
        self._evict()

    def _evict(self) -> None:
        while len(self._pools) > self.max_pools:
            host, pooled = next(iter(self._pools.items()))
            del self._pools[host]
            if pooled.users == 0:
                self._close_later(pooled.transport)

    def _close_later(self, transport: httpx.AsyncHTTPTransport) -> None:
        task = asyncio.ensure_future(transport.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), OrderedDict()
        await asyncio.gather(
            *(p.transport.aclose() for p in pools), *self._closing, return_exceptions=True
        )


def _describe(exc: Exception) -> str:
    # httpx messages name the error (e.g. "[Errno 111] Connection refused"), not the request.
    text = str(exc).strip() or type(exc).__name__
    return text[:200]
