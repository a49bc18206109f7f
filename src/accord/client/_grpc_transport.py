"""The gRPC binding, on accord's own ``lf.a2a.v1`` stubs (``accord.grpc``).

The interface URL is ``host:port`` (as cards usually give it); ``grpc://`` / ``http://`` mean a
plaintext channel, ``grpcs://`` / ``https://`` a TLS one. Headers travel as lower-cased
metadata. Errors come from the status code and the ``google.rpc.Status`` in the
``grpc-status-details-bin`` trailer (its ErrorInfo reason decides the error).

Deadlines: unary calls get the request timeout; streams get none (a gRPC deadline bounds the
whole call, not the silence between events).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtoMessage
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from accord.client._errors import (
    ClientError,
    ConnectionFailedError,
    InvalidResponseError,
    RequestTimeoutError,
    StreamBrokenError,
    error_from_grpc,
)
from accord.client._transport import CallMeta, MethodTransport, StreamItem, TransportContext
from accord.wire import StreamResponse, Wire, WireError
from accord.wire._proto import a2a_pb2_grpc
from accord.wire.protobuf import from_proto, to_proto

T = TypeVar("T", bound=Wire)

_DETAILS_TRAILER = "grpc-status-details-bin"
_DETAIL_TYPES: dict[str, type[ProtoMessage]] = {
    "google.rpc.ErrorInfo": error_details_pb2.ErrorInfo,
    "google.rpc.BadRequest": error_details_pb2.BadRequest,
    "google.rpc.RetryInfo": error_details_pb2.RetryInfo,
}


def _target(url: str) -> tuple[str, bool]:
    """(host:port, use TLS) for an interface URL."""
    for scheme, tls in (
        ("grpcs://", True),
        ("https://", True),
        ("grpc://", False),
        ("http://", False),
    ):
        if url.startswith(scheme):
            return url[len(scheme) :].rstrip("/"), tls
    return url.rstrip("/"), False


def _details(trailers: Sequence[tuple[str, Any]] | None) -> list[dict[str, Any]]:
    """The rich-status details as ProtoJSON dicts (``{"@type": ..., ...}``)."""
    for key, value in trailers or ():
        if key != _DETAILS_TRAILER or not isinstance(value, bytes):
            continue
        status = status_pb2.Status()
        try:
            status.ParseFromString(value)
        except DecodeError:
            return []
        out: list[dict[str, Any]] = []
        for any_ in status.details:
            name = any_.type_url.rsplit("/", 1)[-1]
            cls = _DETAIL_TYPES.get(name)
            if cls is None:
                out.append({"@type": any_.type_url})
                continue
            detail = cls()
            any_.Unpack(detail)
            out.append({"@type": any_.type_url, **json_format.MessageToDict(detail)})
        return out
    return []


def _error(exc: grpc.aio.AioRpcError, *, streaming: bool = False) -> ClientError:
    code = exc.code()
    message = exc.details() or code.name
    details = _details(exc.trailing_metadata())  # type: ignore[arg-type]
    if not details:
        if code is grpc.StatusCode.DEADLINE_EXCEEDED:
            return RequestTimeoutError(message)
        if code is grpc.StatusCode.UNAVAILABLE:
            return ConnectionFailedError(message)
        if streaming and code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.CANCELLED):
            return StreamBrokenError(f"stream interrupted ({code.name}: {message})")
    return error_from_grpc(code.name, message, details)


def _read(message: ProtoMessage, type_: type[T]) -> T:
    try:
        return from_proto(message, type_)
    except WireError as exc:
        raise InvalidResponseError(f"invalid {type_.__name__} in response: {exc}") from None


class GrpcTransport(MethodTransport):
    binding = "GRPC"

    def __init__(self, ctx: TransportContext) -> None:
        target, tls = _target(ctx.interface.url)
        if tls:
            self._channel = grpc.aio.secure_channel(target, grpc.ssl_channel_credentials())
        else:
            self._channel = grpc.aio.insecure_channel(target)
        self._stub = a2a_pb2_grpc.A2AServiceStub(self._channel)  # type: ignore[no-untyped-call]

    async def aclose(self) -> None:
        await self._channel.close()

    @staticmethod
    def _metadata(meta: CallMeta) -> list[tuple[str, str]]:
        return [(key.lower(), value) for key, value in meta.headers.items()]

    async def _unary(self, method: str, request: Wire, type_: type[T], meta: CallMeta) -> T:
        call = getattr(self._stub, method)
        try:
            reply = await call(
                to_proto(request), metadata=self._metadata(meta), timeout=meta.timeout
            )
        except grpc.aio.AioRpcError as exc:
            raise _error(exc) from exc
        return _read(reply, type_)

    async def _stream(
        self, method: str, request: Wire, meta: CallMeta, last_event_id: str = ""
    ) -> AsyncIterator[StreamItem]:
        # gRPC events carry no ids: a resume is a fresh subscription (see accord.client._resume)
        call = getattr(self._stub, method)(to_proto(request), metadata=self._metadata(meta))
        try:
            async for reply in call:
                yield StreamItem(_read(reply, StreamResponse))
        except grpc.aio.AioRpcError as exc:
            raise _error(exc, streaming=True) from exc
        finally:
            call.cancel()

    async def _unary_empty(self, method: str, request: Wire, meta: CallMeta) -> None:
        call = getattr(self._stub, method)
        try:
            await call(to_proto(request), metadata=self._metadata(meta), timeout=meta.timeout)
        except grpc.aio.AioRpcError as exc:
            raise _error(exc) from exc
