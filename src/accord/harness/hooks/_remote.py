"""Remote hook executors: the JSON-RPC protocol (:mod:`.jsonrpc`) posted over HTTP.

A hook URL goes through the SSRF guard push webhooks go through (accord.push._ssrf): only
http(s), and no loopback, private, link-local, metadata … address unless the operator's
allow-list (``[harness] hook_allow_hosts``) admits it. The name is resolved at every call,
each address checked, and the connection made to a checked address (the name kept as the
Host header and TLS server name), so a DNS answer that changes gains nothing. Redirects are
not followed, environment proxies are ignored, a reply is read up to a bound, and the whole
call has a timeout. Every failure refuses the operation naming the hook.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Iterable

import httpx

from accord.harness.hooks._base import Context, HookFailure, Registration
from accord.harness.hooks._jsonrpc import parse_reply, request_body
from accord.push import Guard, IPAddress, RefusedTarget, Target, parse_target, pinned_url

log = logging.getLogger("accord.harness.hooks")

DEFAULT_TIMEOUT_S = 10.0
MAX_REPLY_BYTES = 1024 * 1024


class RemoteExecutor(Registration):
    """A hook executor behind a JSON-RPC 2.0 endpoint."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        guard: Guard,
        priority: int,
        points: Iterable[str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        super().__init__(name, priority, points)
        self.url = url
        self.guard = guard
        self.timeout_s = timeout_s
        self.verify = verify
        self._requests = 0

    async def handle(self, point: str, context: Context) -> Context | None:
        self._requests += 1
        request_id = self._requests
        try:
            async with asyncio.timeout(self.timeout_s):
                raw = await self._post(request_body(request_id, point, context))
        except TimeoutError:
            raise self._failed(f"no answer within {self.timeout_s:g} s") from None
        try:
            return parse_reply(self.name, context, raw, request_id)
        except HookFailure as failure:
            log.warning("remote hook %r failed: %s", self.name, failure.detail)
            raise

    async def _post(self, body: bytes) -> bytes:
        try:
            target = parse_target(self.url)
            addresses = await self.guard.resolve(target)
        except RefusedTarget as exc:
            raise self._failed("its URL is refused by the SSRF guard", str(exc)) from None
        last = ""
        async with httpx.AsyncHTTPTransport(verify=self.verify) as transport:
            for address in addresses:  # each one checked; the next if one cannot be reached
                try:
                    return await self._exchange(transport, target, address, body)
                except httpx.ConnectError as exc:
                    last = str(exc).strip()[:200] or type(exc).__name__
        raise self._failed("unreachable", f"cannot connect to {target.origin}: {last}")

    async def _exchange(
        self,
        transport: httpx.AsyncHTTPTransport,
        target: Target,
        address: IPAddress,
        body: bytes,
    ) -> bytes:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Host": target.url.netloc.rsplit("@", 1)[-1],
        }
        extensions: dict[str, object] = {}
        if target.scheme == "https":
            extensions["sni_hostname"] = target.host
        request = httpx.Request(
            "POST", pinned_url(target, address), headers=headers, content=body,
            extensions=extensions,
        )  # fmt: skip
        try:
            response = await transport.handle_async_request(request)
            try:
                if not 200 <= response.status_code < 300:
                    raise self._failed(f"answered HTTP {response.status_code}")
                raw = await _bounded(response)
                if raw is None:
                    raise self._failed(f"answered with more than {MAX_REPLY_BYTES} bytes")
                return raw
            finally:
                await response.aclose()
        except httpx.ConnectError:
            raise
        except httpx.HTTPError as exc:
            raise self._failed("unreachable", f"{target.origin}: {exc!r}") from None

    def _failed(self, detail: str, logged: str = "") -> HookFailure:
        """The failure a participant is told of (``detail``: no address, no path), with
        more for the log."""
        log.warning("remote hook %r failed: %s", self.name, logged or detail)
        return HookFailure(self.name, detail)


async def _bounded(response: httpx.Response) -> bytes | None:
    """The reply's body; None past MAX_REPLY_BYTES."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
