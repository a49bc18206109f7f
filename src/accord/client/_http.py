"""HTTP plumbing shared by the JSON-RPC and HTTP+JSON transports.

Turns httpx failures into :mod:`accord.client._errors` transport errors, and reads an SSE
response body into events with :class:`~accord.client._sse.SSEParser`.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx

from accord.client._errors import (
    ClientError,
    ConnectionFailedError,
    InvalidResponseError,
    InvalidURLError,
    RequestTimeoutError,
    StreamBrokenError,
    TransportError,
    retry_after_header,
)
from accord.client._options import Timeouts
from accord.client._sse import ServerSentEvent, SSEParser
from accord.client._transport import CallMeta, TransportContext
from accord.client._urls import check_agent_url

SSE_MEDIA_TYPE = "text/event-stream"


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    status: int
    content: bytes
    content_type: str
    url: str
    retry_after: float | None = None  # the answer's Retry-After, in seconds


def answered(error: ClientError, answer: HttpAnswer) -> ClientError:
    """``error``, made of ``answer``, with the wait its ``Retry-After`` asked for."""
    if answer.retry_after is not None:
        error.retry_after = answer.retry_after
    return error


def interface_url(ctx: TransportContext) -> str:
    """The chosen interface's URL, checked: a card advertising one httpx cannot use (an IPv6
    address without brackets, say) is the agent's error, reported before any call."""
    interface = ctx.interface
    try:
        return check_agent_url(interface.url)
    except InvalidURLError as exc:
        raise InvalidResponseError(
            f"the agent card's {interface.protocol_binding} interface has an unusable URL "
            f"{interface.url!r}: {exc.problem}"
        ) from None


def _timeout(timeouts: Timeouts, read: float | None) -> httpx.Timeout:
    return httpx.Timeout(connect=timeouts.connect, read=read, write=read, pool=timeouts.connect)


def transport_error(exc: httpx.HTTPError, *, streaming: bool = False) -> TransportError:
    """The client's exception for an httpx failure, naming the peer and what went wrong."""
    origin = _origin(exc)
    if isinstance(exc, httpx.ConnectTimeout):
        waited = _seconds(exc, "connect")
        return RequestTimeoutError(f"cannot connect to {origin} (no answer within {waited})")
    if isinstance(exc, httpx.TimeoutException):
        waited = _seconds(exc, "read")
        if streaming:
            return RequestTimeoutError(f"no data from {origin} for {waited}")
        return RequestTimeoutError(f"no answer from {origin} within {waited}")
    if isinstance(exc, httpx.ConnectError):
        return ConnectionFailedError(_connect_failure(origin, exc))
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if streaming and isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return StreamBrokenError(f"stream from {origin} interrupted ({text})")
    return ConnectionFailedError(f"{origin}: {text}")


# The HTTP/2 connection preface and an empty SETTINGS frame (RFC 9113 section 3.4).
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_SETTINGS_FRAME = 0x04


async def speaks_http2_only(url: str, timeout: float | None) -> bool:
    """Whether the plain-HTTP server at ``url`` answers the HTTP/2 preface with a SETTINGS
    frame: a server that speaks HTTP/2 with prior knowledge (a gRPC port), asked after an
    HTTP/1.1 request failed there. Any doubt is False."""
    parsed = httpx.URL(url)
    if parsed.scheme != "http" or not parsed.host:
        return False
    port = parsed.port or 80
    try:
        async with asyncio.timeout(min(timeout or 5.0, 5.0)):
            reader, writer = await asyncio.open_connection(parsed.host, port)
            try:
                writer.write(_HTTP2_PREFACE)
                await writer.drain()
                header = await reader.readexactly(9)
            finally:
                writer.close()
    except (OSError, TimeoutError, asyncio.IncompleteReadError):
        return False
    return header[3] == _SETTINGS_FRAME and header[5:9] == b"\x00\x00\x00\x00"


def _origin(exc: httpx.HTTPError) -> str:
    try:
        url = exc.request.url
    except RuntimeError:  # an error raised before any request was made
        return "the agent"
    return f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}"


def _seconds(exc: httpx.HTTPError, which: str) -> str:
    try:
        value = exc.request.extensions.get("timeout", {}).get(which)
    except RuntimeError:
        value = None
    return f"{value:g} s" if isinstance(value, int | float) else "the time allowed"


def _connect_failure(origin: str, exc: httpx.ConnectError) -> str:
    cause = _root_os_error(exc)
    if isinstance(cause, ConnectionRefusedError):
        return f"cannot connect to {origin} (connection refused): is the server running?"
    if isinstance(cause, socket.gaierror):
        return f"cannot connect to {origin} (host not found)"
    reason = cause.strerror if cause is not None and cause.strerror else str(exc)
    return f"cannot connect to {origin} ({reason or type(exc).__name__})"


def _root_os_error(exc: BaseException) -> OSError | None:
    """The innermost OSError behind an httpx error (httpx and anyio wrap it once or twice)."""
    found: OSError | None = None
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError):
            found = current
        current = current.__cause__ or current.__context__
    return found


async def request(
    http: httpx.AsyncClient,
    timeouts: Timeouts,
    method: str,
    url: str,
    meta: CallMeta,
    *,
    body: bytes | None = None,
    params: Mapping[str, str] | None = None,
    content_type: str = "application/json",
    accept: str = "application/json",
) -> HttpAnswer:
    headers = {"Accept": accept, **meta.headers}
    if body is not None:
        headers["Content-Type"] = content_type
    try:
        response = await http.request(
            method,
            url,
            content=body,
            params=params,
            headers=headers,
            timeout=_timeout(timeouts, meta.timeout),
        )
    except httpx.HTTPError as exc:
        raise transport_error(exc) from exc
    return HttpAnswer(
        response.status_code,
        response.content,
        response.headers.get("content-type", ""),
        url,
        retry_after_header(response.headers.get("retry-after")),
    )


@asynccontextmanager
async def _open_stream(
    http: httpx.AsyncClient,
    timeouts: Timeouts,
    method: str,
    url: str,
    meta: CallMeta,
    body: bytes | None,
    content_type: str,
    last_event_id: str,
) -> AsyncIterator[httpx.Response]:
    headers = {"Accept": SSE_MEDIA_TYPE, "Cache-Control": "no-store", **meta.headers}
    if body is not None:
        headers["Content-Type"] = content_type
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    req = http.build_request(
        method, url, content=body, headers=headers, timeout=_timeout(timeouts, meta.timeout)
    )
    try:
        response = await http.send(req, stream=True)
    except httpx.HTTPError as exc:
        raise transport_error(exc) from exc
    try:
        yield response
    finally:
        await response.aclose()


async def stream_events(
    http: httpx.AsyncClient,
    timeouts: Timeouts,
    method: str,
    url: str,
    meta: CallMeta,
    *,
    body: bytes | None = None,
    content_type: str = "application/json",
    last_event_id: str = "",
    on_not_sse: Callable[[HttpAnswer], ClientError],
) -> AsyncIterator[ServerSentEvent]:
    """The events of an SSE response; a non-SSE answer is turned into an error by ``on_not_sse``."""
    async with _open_stream(
        http, timeouts, method, url, meta, body, content_type, last_event_id
    ) as response:
        ctype = response.headers.get("content-type", "")
        if response.status_code != 200 or not ctype.startswith(SSE_MEDIA_TYPE):
            try:
                content = await response.aread()
            except httpx.HTTPError as exc:
                raise transport_error(exc) from exc
            retry_after = retry_after_header(response.headers.get("retry-after"))
            raise on_not_sse(HttpAnswer(response.status_code, content, ctype, url, retry_after))
        parser = SSEParser()
        try:
            async for chunk in response.aiter_bytes():
                for event in parser.feed(chunk):
                    yield event
        except httpx.HTTPError as exc:
            raise transport_error(exc, streaming=True) from exc
        for event in parser.close():
            yield event
