"""Registers the transports that ship with accord."""

from __future__ import annotations

import importlib

from accord.client.jsonrpc import JsonRpcTransport
from accord.client.rest import RestTransport
from accord.client.transport import register_transport, transport_factory


def register() -> None:
    if transport_factory("JSONRPC") is None:
        register_transport("JSONRPC", JsonRpcTransport)
    if transport_factory("HTTP+JSON") is None:
        register_transport("HTTP+JSON", RestTransport)
    if transport_factory("GRPC") is None:
        try:  # the gRPC transport needs grpcio and accord's generated stubs
            module = importlib.import_module("accord.client.grpc_transport")
        except ImportError:
            return
        register_transport("GRPC", module.GrpcTransport)
