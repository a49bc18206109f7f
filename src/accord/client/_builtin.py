"""Registers the transports that ship with accord.

The gRPC transport is registered only when grpcio and accord's generated stubs are present,
and imported on first use, so programs that never speak gRPC do not pay for loading it.
"""

from __future__ import annotations

from importlib.util import find_spec

from accord.client._jsonrpc import JsonRpcTransport
from accord.client._rest import RestTransport
from accord.client._transport import (
    Transport,
    TransportContext,
    register_transport,
    transport_factory,
)


def _grpc_transport(ctx: TransportContext) -> Transport:
    from accord.client._grpc_transport import GrpcTransport

    return GrpcTransport(ctx)


def _grpc_available() -> bool:
    try:
        return find_spec("grpc") is not None and find_spec("accord.wire._proto") is not None
    except ImportError:
        return False


def register() -> None:
    if transport_factory("JSONRPC") is None:
        register_transport("JSONRPC", JsonRpcTransport)
    if transport_factory("HTTP+JSON") is None:
        register_transport("HTTP+JSON", RestTransport)
    if transport_factory("GRPC") is None and _grpc_available():
        register_transport("GRPC", _grpc_transport)
