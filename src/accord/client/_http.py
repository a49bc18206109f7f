"""HTTP plumbing shared by the JSON-RPC and HTTP+JSON transports.

Turns httpx failures into :mod:`accord.client.errors` transport errors, and reads an SSE
response body into events with :class:`~accord.client.sse.SSEParser`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx

from accord.client.errors import (
    ClientError,
    ConnectionFailedError,
    RequestTimeoutError,
    StreamBrokenError,
    TransportError,
)
from accord.client.options import Timeouts
from accord.client.sse import ServerSentEvent, SSEParser
from accord.client.transport import CallMeta

SSE_MEDIA_TYPE = "text/event-stream"


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    status: int
    content: bytes
    content_type: str
    url: str


def _timeout(timeouts: Timeouts, read: float | None) -> httpx.Timeout:
    return httpx.Timeout(connect=timeouts.connect, read=read, write=read, pool=timeouts.connect)


def transport_error(exc: httpx.HTTPError, *, streaming: bool = False) -> TransportError:
    """The client's exception for an httpx failure."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return RequestTimeoutError(text)
    if streaming and isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return StreamBrokenError(f"stream interrupted ({text})")
    return ConnectionFailedError(text)


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
        response.status_code, response.content, response.headers.get("content-type", ""), url
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
            raise on_not_sse(HttpAnswer(response.status_code, content, ctype, url))
        parser = SSEParser()
        try:
            async for chunk in response.aiter_bytes():
                for event in parser.feed(chunk):
                    yield event
        except httpx.HTTPError as exc:
            raise transport_error(exc, streaming=True) from exc
        for event in parser.close():
            yield event
