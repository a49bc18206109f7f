"""The principals guard gRPC too: UNAUTHENTICATED without credentials, and a second tenant's
caller finds nothing of the first tenant's tasks."""

from __future__ import annotations

import grpc
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc

from accord.app._build import build_app
from accord.app._settings import Settings
from accord.grpc._server import start_server

KEY_A = "tenant-a-key-0123456789abcdef"
KEY_B = "tenant-b-key-0123456789abcdef"
PRINCIPALS = [
    {"identity": "a", "tenant": "A", "api_key": KEY_A},
    {"identity": "b", "tenant": "B", "api_key": KEY_B},
]


def meta(key: str | None) -> tuple[tuple[str, str], ...]:
    version = (("a2a-version", "1.0"),)
    return version if key is None else (*version, ("x-api-key", key))


async def test_grpc_authenticates_and_isolates_tenants() -> None:
    app = build_app(Settings(store="memory://", agent="echo", principals=PRINCIPALS))
    await app.service.engine.start()
    server, port = await start_server(app.service, "127.0.0.1:0", app.jsonrpc.auth)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    stub = a2a_pb2_grpc.A2AServiceStub(channel)
    try:
        request = pb.SendMessageRequest(
            message=pb.Message(message_id="m", role=pb.ROLE_USER, parts=[pb.Part(text="hi")])
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.SendMessage(request, metadata=meta(None))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED

        answer = await stub.SendMessage(request, metadata=meta(KEY_A))
        task_id = answer.task.id
        mine = await stub.GetTask(pb.GetTaskRequest(id=task_id), metadata=meta(KEY_A))
        assert mine.status.state == pb.TASK_STATE_COMPLETED
        with pytest.raises(grpc.aio.AioRpcError) as hidden:
            await stub.GetTask(pb.GetTaskRequest(id=task_id), metadata=meta(KEY_B))
        assert hidden.value.code() == grpc.StatusCode.NOT_FOUND
        listed = await stub.ListTasks(pb.ListTasksRequest(), metadata=meta(KEY_B))
        assert list(listed.tasks) == []
    finally:
        await channel.close()
        await server.stop(None)
        await app.service.engine.stop()
