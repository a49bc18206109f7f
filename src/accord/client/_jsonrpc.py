"""The JSON-RPC 2.0 binding: one POST endpoint, methods named like the gRPC service's."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import msgspec

from accord.client._errors import (
    ClientError,
    InvalidResponseError,
    UnexpectedStatusError,
    error_for_http_status,
    error_from_jsonrpc,
)
from accord.client._http import HttpAnswer, answered, interface_url, request, stream_events
from accord.client._transport import CallMeta, MethodTransport, StreamItem, TransportContext
from accord.wire import StreamResponse, Wire, WireError, decode, encode

T = TypeVar("T")


class _Envelope(msgspec.Struct):
    """A JSON-RPC response; ``result`` is kept raw and decoded into the expected type."""

    jsonrpc: str = ""
    result: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    error: Any = None


_envelope = msgspec.json.Decoder(_Envelope)


def _unwrap(content: bytes | str, type_: type[T]) -> T | None:
    try:
        envelope = _envelope.decode(content)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InvalidResponseError(f"not a JSON-RPC response: {exc}") from None
    if envelope.error is not None:
        raise error_from_jsonrpc(envelope.error)
    raw = bytes(envelope.result)
    if not raw or raw == b"null" or type_ is type(None):
        return None
    try:
        return decode(raw, type_)
    except WireError as exc:
        raise InvalidResponseError(f"invalid {type_.__name__} in result: {exc}") from None


def _not_ok(answer: HttpAnswer) -> ClientError:
    """A non-SSE or non-200 answer: a JSON-RPC error if there is one, else the HTTP status."""
    if answer.content:
        try:
            envelope = _envelope.decode(answer.content)
        except (msgspec.DecodeError, msgspec.ValidationError):
            envelope = None
        if envelope is not None and envelope.error is not None:
            return answered(error_from_jsonrpc(envelope.error), answer)
        if envelope is not None and answer.status == 200:
            return InvalidResponseError("expected an event stream, got a JSON-RPC result")
    return answered(
        error_for_http_status(answer.status)
        or UnexpectedStatusError(
            answer.status, answer.content.decode("utf-8", "replace"), answer.url
        ),
        answer,
    )


class JsonRpcTransport(MethodTransport):
    binding = "JSONRPC"

    def __init__(self, ctx: TransportContext) -> None:
        self._url = interface_url(ctx)
        self._http = ctx.http
        self._timeouts = ctx.timeouts
        self._ids = itertools.count(1)

    def _body(self, method: str, params: Wire) -> bytes:
        return b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}' % (
            next(self._ids),
            method.encode(),
            encode(params),
        )

    async def _unary_empty(self, method: str, request: Wire, meta: CallMeta) -> None:
        await self._call_optional(method, request, type(None), meta)

    async def _unary(self, method: str, params: Wire, type_: type[T], meta: CallMeta) -> T:
        result = await self._call_optional(method, params, type_, meta)
        if result is None:
            raise InvalidResponseError(f"{method}: the response has no result")
        return result

    async def _call_optional(
        self, method: str, params: Wire, type_: type[T], meta: CallMeta
    ) -> T | None:
        answer = await request(
            self._http, self._timeouts, "POST", self._url, meta, body=self._body(method, params)
        )
        if answer.status != 200:
            raise _not_ok(answer)
        return _unwrap(answer.content, type_)

    async def _stream(
        self, method: str, params: Wire, meta: CallMeta, last_event_id: str = ""
    ) -> AsyncIterator[StreamItem]:
        async for event in stream_events(
            self._http,
            self._timeouts,
            "POST",
            self._url,
            meta,
            body=self._body(method, params),
            last_event_id=last_event_id,
            on_not_sse=_not_ok,
        ):
            if not event.data:
                continue
            response = _unwrap(event.data, StreamResponse)
            if response is None:
                raise InvalidResponseError(f"{method}: a stream event has no result")
            yield StreamItem(response, event.id, event.retry)
