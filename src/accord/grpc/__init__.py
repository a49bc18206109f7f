"""The gRPC binding: accord's ``lf.a2a.v1`` stubs and conversion to and from the wire model."""

from accord.grpc._server import WithGrpc, start_server

__all__ = [
    "WithGrpc",
    "start_server",
]
