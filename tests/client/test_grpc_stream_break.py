"""A gRPC stream cut by the server is resubscribed; the caller sees each event once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
from a2a.types import a2a_pb2_grpc
from breaking_server import BREAK_AFTER, EVENTS
from client_events import describe
from test_stream_break import ALL_EVENTS, FAST

from accord.client import Client
from accord.wire._codec import convert
from accord.wire._model import AgentCard, AgentInterface, StreamResponse
from accord.wire.protobuf import to_proto


def proto(event: dict[str, Any]) -> Any:
    return to_proto(convert(event, StreamResponse))


class CuttingService(a2a_pb2_grpc.A2AServiceServicer):  # type: ignore[misc]
    """Sends three events, then fails the stream; a resubscription gets a snapshot and the rest.
    (The official SDK's servicer base: accord's generated module keeps only the client stub.)"""

    def __init__(self) -> None:
        self.subscribes = 0

    async def SendStreamingMessage(self, request: Any, context: Any) -> AsyncIterator[Any]:
        for event in EVENTS[:BREAK_AFTER]:
            yield proto(event)
        await context.abort(grpc.StatusCode.UNAVAILABLE, "going away")

    async def SubscribeToTask(self, request: Any, context: Any) -> AsyncIterator[Any]:
        self.subscribes += 1
        snapshot = {
            "task": {
                "id": request.id,
                "contextId": "ctx-1",
                "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-01-01T00:00:01.000Z"},
                "artifacts": [{"artifactId": "a1", "parts": [{"text": "a"}, {"text": "b"}]}],
            }
        }
        for event in [snapshot, *EVENTS[BREAK_AFTER + 1 :]]:
            yield proto(event)


async def test_grpc_stream_break_is_resubscribed() -> None:
    service = CuttingService()
    server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(service, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        card = AgentCard(
            name="cutting",
            description="d",
            version="1",
            supported_interfaces=[
                AgentInterface(
                    url=f"127.0.0.1:{port}", protocol_binding="GRPC", protocol_version="1.0"
                )
            ],
        )
        async with Client(card, resume=FAST) as client:
            events = [describe(e) async for e in client.stream("go")]
    finally:
        await server.stop(None)
    assert events == ALL_EVENTS
    assert service.subscribes == 1
