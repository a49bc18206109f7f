"""Fetching a file part's ``url`` through the SSRF guard push webhooks and remote hooks go
through (accord.push): only http(s); the name resolved and every address checked (no
loopback, private, link-local, metadata … address unless ``[media] allow_hosts`` admits it);
the connection made to a checked address with the name kept as Host and TLS server name;
no redirects, no environment proxies; the size refused from Content-Length before the body
and bounded while it arrives; the whole fetch under a timeout."""

from __future__ import annotations

import asyncio
import ssl

import httpx

from accord.errors import AccordError
from accord.push import Guard, IPAddress, RefusedTarget, Target, parse_target, pinned_url
from accord.wire import A2AError, ErrorKind


class FetchFailed(AccordError):
    """Why a URL was not fetched (one line, no address beyond the URL's own origin)."""


async def fetch(
    url: str,
    guard: Guard,
    *,
    limit: int,
    timeout_s: float,
    verify: ssl.SSLContext | bool = True,
) -> tuple[bytes, str]:
    """The body and Content-Type at ``url``; FetchFailed, or PAYLOAD_TOO_LARGE past ``limit``."""
    try:
        target = parse_target(url)
        addresses = await guard.resolve(target)
    except RefusedTarget as exc:
        raise FetchFailed(f"refused by the SSRF guard: {exc}") from None
    last = ""
    try:
        async with asyncio.timeout(timeout_s), httpx.AsyncHTTPTransport(verify=verify) as transport:
            for address in addresses:
                try:
                    return await _get(transport, target, address, limit)
                except httpx.ConnectError as exc:
                    last = str(exc).strip()[:200] or type(exc).__name__
    except TimeoutError:
        raise FetchFailed(f"no answer within {timeout_s:g} s") from None
    raise FetchFailed(f"cannot connect to {target.origin}: {last}")


async def _get(
    transport: httpx.AsyncHTTPTransport, target: Target, address: IPAddress, limit: int
) -> tuple[bytes, str]:
    extensions: dict[str, object] = {}
    if target.scheme == "https":
        extensions["sni_hostname"] = target.host
    request = httpx.Request(
        "GET",
        pinned_url(target, address),
        headers={"Host": target.url.netloc.rsplit("@", 1)[-1], "Accept": "*/*"},
        extensions=extensions,
    )
    try:
        response = await transport.handle_async_request(request)
    except httpx.ConnectError:
        raise
    except httpx.HTTPError as exc:
        raise FetchFailed(f"{target.origin}: {type(exc).__name__}") from None
    try:
        if response.status_code != 200:
            raise FetchFailed(f"{target.origin} answered HTTP {response.status_code}")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
            raise too_large("the file at the url", limit)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_raw():
            size += len(chunk)
            if size > limit:
                raise too_large("the file at the url", limit)
            chunks.append(chunk)
        return b"".join(chunks), response.headers.get("content-type", "")
    except httpx.HTTPError as exc:
        raise FetchFailed(f"{target.origin}: {type(exc).__name__}") from None
    finally:
        await response.aclose()


def too_large(what: str, limit: int) -> A2AError:
    return A2AError(ErrorKind.PAYLOAD_TOO_LARGE, f"{what} exceeds {limit} bytes")
