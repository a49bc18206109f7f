"""accord's gRPC server (accord.grpc._server) driven by the official SDK's generated stubs.

The server runs in the test's event loop over the in-memory store; the client side is the
official ``a2a.types.a2a_pb2_grpc`` stub on a grpc.aio channel, so requests and answers are
checked against the official schema, not ours.
"""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import msgspec
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc
from google.rpc import error_details_pb2, status_pb2
from tests.processes import free_port as _free_port

from accord.agents._api import RequestContext, TaskHandle
from accord.app._build import build_app
from accord.app._settings import Principal, Settings
from accord.grpc._server import WithGrpc, rich_status, start_server
from accord.wire._errors import A2AError, ErrorKind, FieldViolation
from accord.wire._model import AgentExtension

TOKEN = "grpc-test-token"
VERSION = (("a2a-version", "1.0"),)
AUTHED = (*VERSION, ("authorization", f"Bearer {TOKEN}"))
REQUIRED_EXTENSION = "https://example.com/ext/required/v1"


async def agent(ctx: RequestContext, task: TaskHandle) -> None:
    """``reply``: a direct message; ``wait``: works until canceled; else: echo and complete."""
    if ctx.text == "reply":
        await task.reply("direct answer")
        return
    await task.start_working()
    if ctx.text == "wait":
        await asyncio.sleep(60)
    await task.update_artifact(text=f"echo: {ctx.text}", name="echo", last_chunk=True)
    await task.complete()


@dataclass
class Server:
    stub: Any
    service: Any
    channel: Any


async def _serve(**settings: Any) -> AsyncIterator[Server]:
    app = build_app(
        Settings(
            store="memory://",
            extended_card=True,
            require_auth=False,
            bearer_tokens={TOKEN: Principal("tester")},
            **settings,
        ),
        agent=agent,
    )
    await app.service.engine.start()
    server, port = await start_server(
        app.service, "127.0.0.1:0", app.jsonrpc.auth, require_auth=False
    )
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Server(a2a_pb2_grpc.A2AServiceStub(channel), app.service, channel)
    finally:
        await channel.close()
        await server.stop(None)
        await app.service.engine.stop()


@pytest.fixture
async def srv() -> AsyncIterator[Server]:
    async for server in _serve():
        yield server


def _send(text: str, **message: Any) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(
        message=pb.Message(
            message_id=f"m-{text}-{id(message)}",
            role=pb.ROLE_USER,
            parts=[pb.Part(text=text)],
            **message,
        )
    )


@dataclass
class Failure:
    code: grpc.StatusCode
    reason: str
    violations: list[str]


async def _failure(call: Any) -> Failure:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        if hasattr(call, "__aiter__"):  # a server stream: the error ends it
            async for _ in call:
                pass
        else:
            await call
    return _decode(caught.value)


def _decode(error: grpc.aio.AioRpcError) -> Failure:
    raw = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    assert raw is not None, "no rich status details"
    status = status_pb2.Status.FromString(raw)
    assert status.code == error.code().value[0]
    reason, violations = "", []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            assert info.domain == "a2a-protocol.org"
            reason = info.reason
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            violations = [v.field for v in bad.field_violations]
    return Failure(error.code(), reason, violations)


async def _rest(call: Any) -> list[Any]:
    """The remaining events of a stream already read with ``read()``."""
    events = []
    while (event := await call.read()) is not grpc.aio.EOF:
        events.append(event)
    return events


async def _stream(call: Any) -> list[str]:
    return [event.WhichOneof("payload") async for event in call]


# --- operations ----------------------------------------------------------------------------


async def test_send_message_returns_the_finished_task(srv: Server) -> None:
    response = await srv.stub.SendMessage(_send("hello"), metadata=VERSION)
    assert response.WhichOneof("payload") == "task"
    task = response.task
    assert task.status.state == pb.TASK_STATE_COMPLETED
    assert task.artifacts[0].parts[0].text == "echo: hello"
    assert task.history[0].parts[0].text == "hello"
    assert task.status.HasField("timestamp")


async def test_send_message_direct_reply(srv: Server) -> None:
    response = await srv.stub.SendMessage(_send("reply"), metadata=VERSION)
    assert response.WhichOneof("payload") == "message"
    assert response.message.role == pb.ROLE_AGENT
    assert response.message.parts[0].text == "direct answer"


async def test_streaming_message_sends_task_first_and_ends_at_terminal(srv: Server) -> None:
    events = [e async for e in srv.stub.SendStreamingMessage(_send("hi"), metadata=VERSION)]
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task"
    assert "artifact_update" in kinds
    assert kinds[-1] == "status_update"
    assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED


async def test_streaming_direct_reply_is_one_message(srv: Server) -> None:
    kinds = await _stream(srv.stub.SendStreamingMessage(_send("reply"), metadata=VERSION))
    assert kinds == ["message"]


async def test_get_task_and_history_length(srv: Server) -> None:
    sent = await srv.stub.SendMessage(_send("one"), metadata=VERSION)
    task = await srv.stub.GetTask(pb.GetTaskRequest(id=sent.task.id), metadata=VERSION)
    assert task.id == sent.task.id and len(task.history) == 1
    bare = await srv.stub.GetTask(
        pb.GetTaskRequest(id=sent.task.id, history_length=0), metadata=VERSION
    )
    assert len(bare.history) == 0


async def test_get_unknown_task_is_not_found_with_error_info(srv: Server) -> None:
    failure = await _failure(srv.stub.GetTask(pb.GetTaskRequest(id="nope"), metadata=VERSION))
    assert (failure.code, failure.reason) == (grpc.StatusCode.NOT_FOUND, "TASK_NOT_FOUND")


async def test_list_tasks_pages_and_validates(srv: Server) -> None:
    for text in ("a", "b", "c"):
        await srv.stub.SendMessage(_send(text), metadata=VERSION)
    page = await srv.stub.ListTasks(pb.ListTasksRequest(page_size=2), metadata=VERSION)
    assert len(page.tasks) == 2 and page.total_size == 3 and page.page_size == 2
    assert page.next_page_token
    rest = await srv.stub.ListTasks(
        pb.ListTasksRequest(page_size=2, page_token=page.next_page_token), metadata=VERSION
    )
    assert len(rest.tasks) == 1 and rest.next_page_token == ""
    failure = await _failure(
        srv.stub.ListTasks(pb.ListTasksRequest(page_size=500), metadata=VERSION)
    )
    assert failure.code == grpc.StatusCode.INVALID_ARGUMENT
    assert failure.violations == ["pageSize"]


async def test_cancel_and_cancel_again(srv: Server) -> None:
    request = _send("wait")
    request.configuration.return_immediately = True
    started = await srv.stub.SendMessage(request, metadata=VERSION)
    canceled = await srv.stub.CancelTask(pb.CancelTaskRequest(id=started.task.id), metadata=VERSION)
    assert canceled.status.state == pb.TASK_STATE_CANCELED
    failure = await _failure(
        srv.stub.CancelTask(pb.CancelTaskRequest(id=started.task.id), metadata=VERSION)
    )
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "TASK_NOT_CANCELABLE",
    )


async def test_subscribe_follows_a_task_to_its_end(srv: Server) -> None:
    request = _send("wait")
    request.configuration.return_immediately = True
    started = await srv.stub.SendMessage(request, metadata=VERSION)
    call = srv.stub.SubscribeToTask(pb.SubscribeToTaskRequest(id=started.task.id), metadata=VERSION)
    first = await call.read()
    assert first.WhichOneof("payload") == "task" and first.task.id == started.task.id
    await srv.stub.CancelTask(pb.CancelTaskRequest(id=started.task.id), metadata=VERSION)
    rest = await _rest(call)
    assert rest[-1].status_update.status.state == pb.TASK_STATE_CANCELED
    failure = await _failure(
        srv.stub.SubscribeToTask(pb.SubscribeToTaskRequest(id=started.task.id), metadata=VERSION)
    )
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "UNSUPPORTED_OPERATION",
    )


async def test_push_config_lifecycle(srv: Server) -> None:
    sent = await srv.stub.SendMessage(_send("push"), metadata=VERSION)
    task_id = sent.task.id
    created = await srv.stub.CreateTaskPushNotificationConfig(
        pb.TaskPushNotificationConfig(
            task_id=task_id,
            url="https://hooks.example.com/a2a",
            token="secret-token",
            authentication=pb.AuthenticationInfo(scheme="Bearer", credentials="c"),
        ),
        metadata=VERSION,
    )
    assert created.id and created.task_id == task_id
    got = await srv.stub.GetTaskPushNotificationConfig(
        pb.GetTaskPushNotificationConfigRequest(task_id=task_id, id=created.id), metadata=VERSION
    )
    assert got.url == "https://hooks.example.com/a2a"
    listed = await srv.stub.ListTaskPushNotificationConfigs(
        pb.ListTaskPushNotificationConfigsRequest(task_id=task_id), metadata=VERSION
    )
    assert [c.id for c in listed.configs] == [created.id]
    deleted = await srv.stub.DeleteTaskPushNotificationConfig(
        pb.DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=created.id),
        metadata=VERSION,
    )
    assert deleted.ByteSize() == 0
    failure = await _failure(
        srv.stub.GetTaskPushNotificationConfig(
            pb.GetTaskPushNotificationConfigRequest(task_id=task_id, id=created.id),
            metadata=VERSION,
        )
    )
    assert failure.code == grpc.StatusCode.NOT_FOUND


async def test_extended_card_needs_authentication(srv: Server) -> None:
    card = await srv.stub.GetExtendedAgentCard(pb.GetExtendedAgentCardRequest(), metadata=AUTHED)
    assert card.name and "extended" in card.description
    failure = await _failure(
        srv.stub.GetExtendedAgentCard(pb.GetExtendedAgentCardRequest(), metadata=VERSION)
    )
    assert failure.code == grpc.StatusCode.UNAUTHENTICATED
    wrong = await _failure(
        srv.stub.GetExtendedAgentCard(
            pb.GetExtendedAgentCardRequest(),
            metadata=(*VERSION, ("authorization", "Bearer wrong")),
        )
    )
    assert wrong.code == grpc.StatusCode.UNAUTHENTICATED


# --- service parameters and validation -----------------------------------------------------


async def test_version_is_checked_from_metadata(srv: Server) -> None:
    missing = await _failure(srv.stub.GetTask(pb.GetTaskRequest(id="x")))
    assert (missing.code, missing.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "VERSION_NOT_SUPPORTED",
    )
    old = await _failure(
        srv.stub.GetTask(pb.GetTaskRequest(id="x"), metadata=(("a2a-version", "0.3"),))
    )
    assert old.reason == "VERSION_NOT_SUPPORTED"
    patch = await _failure(
        srv.stub.GetTask(pb.GetTaskRequest(id="x"), metadata=(("a2a-version", "1.0.1"),))
    )
    assert patch.reason == "TASK_NOT_FOUND"  # 1.0.1 is 1.0: the version passed


async def test_required_extension_is_checked_and_echoed(srv: Server) -> None:
    capabilities = msgspec.structs.replace(
        srv.service.card.capabilities,
        extensions=[AgentExtension(uri=REQUIRED_EXTENSION, required=True)],
    )
    srv.service.card = msgspec.structs.replace(srv.service.card, capabilities=capabilities)
    failure = await _failure(srv.stub.SendMessage(_send("x"), metadata=VERSION))
    assert (failure.code, failure.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "EXTENSION_SUPPORT_REQUIRED",
    )
    call = srv.stub.SendMessage(
        _send("x"), metadata=(*VERSION, ("a2a-extensions", f"{REQUIRED_EXTENSION}, urn:other"))
    )
    response = await call
    assert response.task.status.state == pb.TASK_STATE_COMPLETED
    assert dict(await call.initial_metadata())["a2a-extensions"] == REQUIRED_EXTENSION


async def test_invalid_request_names_the_field(srv: Server) -> None:
    empty = pb.SendMessageRequest(message=pb.Message(message_id="m", role=pb.ROLE_USER))
    failure = await _failure(srv.stub.SendMessage(empty, metadata=VERSION))
    assert failure.code == grpc.StatusCode.INVALID_ARGUMENT
    assert failure.violations == ["message.parts"]
    missing = await _failure(srv.stub.SendMessage(pb.SendMessageRequest(), metadata=VERSION))
    assert missing.violations == ["message"]


@pytest.mark.parametrize("value", ["9" * 5000, "99999999999999999999", "12abc", "-1"])
async def test_a_last_event_id_the_server_never_sent_is_invalid_argument(
    srv: Server, value: str
) -> None:
    # Before: int() refused what str.isdigit() let through, and gRPC answered INTERNAL.
    metadata = (*VERSION, ("last-event-id", value))
    for call in (
        srv.stub.GetTask(pb.GetTaskRequest(id="x"), metadata=metadata),
        srv.stub.SubscribeToTask(pb.SubscribeToTaskRequest(id="x"), metadata=metadata),
    ):
        failure = await _failure(call)
        assert (failure.code, failure.violations) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            ["Last-Event-ID"],
        )


async def test_a_page_token_the_server_did_not_sign_is_invalid_argument(srv: Server) -> None:
    await srv.stub.SendMessage(_send("a"), metadata=VERSION)
    await srv.stub.SendMessage(_send("b"), metadata=VERSION)
    page = await srv.stub.ListTasks(pb.ListTasksRequest(page_size=1), metadata=VERSION)
    body, _, _ = page.next_page_token.partition(".")
    forged = base64.urlsafe_b64encode(b"99999999999999999999999:x").decode().rstrip("=")
    for token in (body, forged, f"{forged}.{page.next_page_token.partition('.')[2]}"):
        failure = await _failure(
            srv.stub.ListTasks(pb.ListTasksRequest(page_token=token), metadata=VERSION)
        )
        assert (failure.code, failure.violations) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            ["pageToken"],
        )


async def test_deadline_ends_the_stream_not_the_task(srv: Server) -> None:
    call = srv.stub.SendStreamingMessage(_send("wait"), metadata=VERSION, timeout=0.5)
    first = await call.read()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _rest(call)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    task = await srv.stub.GetTask(pb.GetTaskRequest(id=first.task.id), metadata=VERSION)
    assert task.status.state in (pb.TASK_STATE_SUBMITTED, pb.TASK_STATE_WORKING)


async def test_oversized_message_is_refused() -> None:
    async for server in _serve(max_body_bytes=64 * 1024):
        failure_call = server.stub.SendMessage(_send("x" * 100_000), metadata=VERSION)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await failure_call
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        small = await server.stub.SendMessage(_send("small"), metadata=VERSION)
        assert small.task.status.state == pb.TASK_STATE_COMPLETED


async def test_subscribers_see_the_same_events_and_one_leaving_harms_nobody(srv: Server) -> None:
    request = _send("wait")
    request.configuration.return_immediately = True
    started = await srv.stub.SendMessage(request, metadata=VERSION)
    task_id = started.task.id
    subscribe = pb.SubscribeToTaskRequest(id=task_id)
    first = srv.stub.SubscribeToTask(subscribe, metadata=VERSION)
    second = srv.stub.SubscribeToTask(subscribe, metadata=VERSION)
    leaving = srv.stub.SubscribeToTask(subscribe, metadata=VERSION)
    for call in (first, second, leaving):
        assert (await call.read()).task.id == task_id
    leaving.cancel()  # a client going away closes only its own stream
    await srv.stub.CancelTask(pb.CancelTaskRequest(id=task_id), metadata=VERSION)
    seen_first = [e.SerializeToString() for e in await _rest(first)]
    seen_second = [e.SerializeToString() for e in await _rest(second)]
    assert seen_first == seen_second and seen_first


async def test_streaming_client_cancel_leaves_the_task_running(srv: Server) -> None:
    call = srv.stub.SendStreamingMessage(_send("wait"), metadata=VERSION)
    first = await call.read()
    call.cancel()
    task = await srv.stub.GetTask(pb.GetTaskRequest(id=first.task.id), metadata=VERSION)
    assert task.status.state in (pb.TASK_STATE_SUBMITTED, pb.TASK_STATE_WORKING)


@pytest.mark.parametrize("kind", list(ErrorKind), ids=lambda k: k.name)
def test_every_error_of_the_table_has_a_rich_status(kind: ErrorKind) -> None:
    error = A2AError(
        kind, "what went wrong", {"taskId": "t1"}, [FieldViolation("message.parts", "empty")]
    )
    status = rich_status(error)
    assert status.code == getattr(grpc.StatusCode, kind.grpc_status)
    assert status.details == "what went wrong"
    ((key, raw),) = status.trailing_metadata
    assert key == "grpc-status-details-bin"
    decoded = status_pb2.Status.FromString(raw)
    assert (decoded.code, decoded.message) == (status.code.value[0], "what went wrong")
    info = error_details_pb2.ErrorInfo()
    assert decoded.details[0].Unpack(info)
    assert (info.reason, info.domain, dict(info.metadata)) == (
        kind.reason,
        "a2a-protocol.org",
        {"taskId": "t1"},
    )
    bad_request = error_details_pb2.BadRequest()
    assert decoded.details[1].Unpack(bad_request)
    assert [v.field for v in bad_request.field_violations] == ["message.parts"]


async def _lifespan(app: Any, *events: str) -> list[str]:
    """Drive an ASGI lifespan: the given events in, the app's answers out."""
    incoming: asyncio.Queue[dict[str, str]] = asyncio.Queue()
    for event in events:
        incoming.put_nowait({"type": event})
    answers: list[str] = []

    async def send(message: dict[str, Any]) -> None:
        answers.append(message["type"])

    await asyncio.wait_for(app({"type": "lifespan"}, incoming.get, send), 30)
    return answers


async def test_with_grpc_serves_between_startup_and_shutdown() -> None:
    app = build_app(Settings(store="memory://"), agent=agent)
    port = _free_port()
    served = WithGrpc(app, f"127.0.0.1:{port}")
    incoming: asyncio.Queue[dict[str, str]] = asyncio.Queue()
    answers: asyncio.Queue[str] = asyncio.Queue()

    async def send(message: dict[str, Any]) -> None:
        answers.put_nowait(message["type"])

    running = asyncio.create_task(served({"type": "lifespan"}, incoming.get, send))
    incoming.put_nowait({"type": "lifespan.startup"})
    assert await asyncio.wait_for(answers.get(), 30) == "lifespan.startup.complete"
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        reply = await stub.SendMessage(_send("hi"), metadata=VERSION)
        assert reply.task.status.state == pb.TASK_STATE_COMPLETED
    incoming.put_nowait({"type": "lifespan.shutdown"})
    assert await asyncio.wait_for(answers.get(), 30) == "lifespan.shutdown.complete"
    await running
    assert served.server is None


async def test_with_grpc_fails_startup_when_the_port_is_taken() -> None:
    app = build_app(Settings(store="memory://"), agent=agent)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        answers = await _lifespan(WithGrpc(app, address), "lifespan.startup")
    assert answers == ["lifespan.startup.failed"]  # and the app has shut its engine down


async def test_bytes_that_are_not_the_request_are_invalid_argument(srv: Server) -> None:
    call = srv.channel.unary_unary("/lf.a2a.v1.A2AService/GetTask")  # raw bytes in and out
    failure = await _failure(call(b"\xff\xff\xff", metadata=VERSION))
    assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PARAMS")
