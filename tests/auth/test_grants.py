"""Actor grants: one table (accord.core._grants), checked on every binding for every operation.

A principal that is only a remote worker (``a2a.tasks.Agent``), one with no actors, or a JWT
whose ``actors`` claim is empty must not send messages, cancel the tenant's tasks, manage its
webhooks or read the extended card over JSON-RPC, HTTP+JSON or gRPC, any more than over the
command surface. The tests run over the operations table itself, so an operation added without
a grant (or without a request here) fails them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
import jwt
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc

from accord.agents._api import RequestContext, TaskHandle
from accord.app._build import build_app
from accord.app._settings import Settings
from accord.core._caller import AGENT_ACTOR, CLIENT_ACTOR, DISCOVERY_ACTOR, OPEN
from accord.core._grants import GRANTS, required_actor
from accord.grpc._server import start_server
from accord.server._app import A2AApplication
from accord.server._binding import Binding
from accord.service._operations import OPERATIONS
from accord.surface._contract import operations as surface_operations
from accord.surface._contract import seed_document
from accord.wire._errors import A2AError, ErrorKind

SECRET = "a-test-secret-that-is-long-enough-0123456789"
TENANT = "acme"
WEBHOOK_TOKEN = "webhook-token-that-must-not-leak"
WEBHOOK_CREDENTIALS = "webhook-credentials-that-must-not-leak"

# Who asks, and the actors each holds.
ACTORS: dict[str, frozenset[str]] = {
    "full": frozenset({CLIENT_ACTOR, DISCOVERY_ACTOR}),
    "client": frozenset({CLIENT_ACTOR}),
    "discoverer": frozenset({DISCOVERY_ACTOR}),
    "worker": frozenset({AGENT_ACTOR}),
    "nobody": frozenset(),
    "empty-jwt": frozenset(),  # an unlisted subject whose ``actors`` claim is []
}
KEYS = {who: f"{who}-key-0123456789abcdef" for who in ACTORS if who != "empty-jwt"}
PRINCIPALS = [
    {"identity": who, "tenant": TENANT, "actors": sorted(ACTORS[who]), "api_key": key}
    for who, key in KEYS.items()
]
BINDINGS = ("JSONRPC", "HTTP+JSON", "GRPC")


def credentials(who: str) -> dict[str, str]:
    if who == "empty-jwt":
        claims = {"sub": "svc", "tenant": TENANT, "actors": [], "exp": int(time.time()) + 600}
        return {"authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}
    return {"x-api-key": KEYS[who]}


async def waiting_agent(ctx: RequestContext, task: TaskHandle) -> None:
    """``wait``: works until canceled; anything else: completes at once."""
    await task.start_working()
    if ctx.text == "wait":
        await asyncio.Event().wait()
    await task.complete()


def message(text: str) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}


# --- one request per operation, per binding -------------------------------------------------


@dataclass(frozen=True)
class Ids:
    waiting: str  # a working task, with the webhook "cfg"
    done: str  # a completed task


@dataclass(frozen=True)
class Request:
    jsonrpc: dict[str, Any]  # params
    rest: tuple[str, str, dict[str, Any] | None]  # method, path, JSON body
    grpc: Any  # the request message


def _config(task_id: str, config_id: str) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "id": config_id,
        "url": "https://example.com/hook",
        "token": WEBHOOK_TOKEN,
        "authentication": {"scheme": "Bearer", "credentials": WEBHOOK_CREDENTIALS},
    }


def _pb_message(text: str) -> pb.Message:
    return pb.Message(message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text=text)])


REQUESTS: dict[str, Callable[[Ids], Request]] = {
    "SendMessage": lambda ids: Request(
        {"message": message("hi")},
        ("POST", "/message:send", {"message": message("hi")}),
        pb.SendMessageRequest(message=_pb_message("hi")),
    ),
    "SendStreamingMessage": lambda ids: Request(
        {"message": message("hi")},
        ("POST", "/message:stream", {"message": message("hi")}),
        pb.SendMessageRequest(message=_pb_message("hi")),
    ),
    "GetTask": lambda ids: Request(
        {"id": ids.waiting},
        ("GET", f"/tasks/{ids.waiting}", None),
        pb.GetTaskRequest(id=ids.waiting),
    ),
    "ListTasks": lambda ids: Request({}, ("GET", "/tasks", None), pb.ListTasksRequest()),
    "CancelTask": lambda ids: Request(
        {"id": ids.waiting},
        ("POST", f"/tasks/{ids.waiting}:cancel", {}),
        pb.CancelTaskRequest(id=ids.waiting),
    ),
    "SubscribeToTask": lambda ids: Request(  # a completed task: no stream stays open
        {"id": ids.done},
        ("POST", f"/tasks/{ids.done}:subscribe", None),
        pb.SubscribeToTaskRequest(id=ids.done),
    ),
    "CreateTaskPushNotificationConfig": lambda ids: Request(
        _config(ids.waiting, "other"),
        ("POST", f"/tasks/{ids.waiting}/pushNotificationConfigs", _config(ids.waiting, "other")),
        pb.TaskPushNotificationConfig(
            task_id=ids.waiting, id="other", url="https://example.com/hook"
        ),
    ),
    "GetTaskPushNotificationConfig": lambda ids: Request(
        {"taskId": ids.waiting, "id": "cfg"},
        ("GET", f"/tasks/{ids.waiting}/pushNotificationConfigs/cfg", None),
        pb.GetTaskPushNotificationConfigRequest(task_id=ids.waiting, id="cfg"),
    ),
    "ListTaskPushNotificationConfigs": lambda ids: Request(
        {"taskId": ids.waiting},
        ("GET", f"/tasks/{ids.waiting}/pushNotificationConfigs", None),
        pb.ListTaskPushNotificationConfigsRequest(task_id=ids.waiting),
    ),
    "DeleteTaskPushNotificationConfig": lambda ids: Request(
        {"taskId": ids.waiting, "id": "cfg"},
        ("DELETE", f"/tasks/{ids.waiting}/pushNotificationConfigs/cfg", None),
        pb.DeleteTaskPushNotificationConfigRequest(task_id=ids.waiting, id="cfg"),
    ),
    "GetExtendedAgentCard": lambda ids: Request(
        {}, ("GET", "/extendedAgentCard", None), pb.GetExtendedAgentCardRequest()
    ),
}


@dataclass
class Answer:
    reason: str  # the error's reason ("PERMISSION_DENIED", …), "" when it succeeded
    text: str  # everything the caller was told


@dataclass
class Server:
    app: A2AApplication
    http: httpx.AsyncClient
    stub: Any
    ids: Ids

    async def call(self, binding: str, operation: str, who: str) -> Answer:
        request = REQUESTS[operation](self.ids)
        headers = {"a2a-version": "1.0", **credentials(who)}
        if binding == "GRPC":
            return await self._grpc(operation, request.grpc, headers)
        if binding == "JSONRPC":
            body = {"jsonrpc": "2.0", "id": 1, "method": operation, "params": request.jsonrpc}
            response = await self.http.post("/", json=body, headers=headers)
            if response.headers["content-type"].startswith("text/event-stream"):
                return Answer("", response.text)
            error = response.json().get("error")
            return Answer(_reason(error["data"]) if error else "", response.text)
        method, path, json_body = request.rest
        response = await self.http.request(method, path, json=json_body, headers=headers)
        if response.status_code == 200:
            return Answer("", response.text)
        return Answer(_reason(response.json()["error"]["details"]), response.text)

    async def _grpc(self, operation: str, message: Any, headers: dict[str, str]) -> Answer:
        metadata = tuple(headers.items())
        try:
            call = getattr(self.stub, operation)(message, metadata=metadata)
            if hasattr(call, "__aiter__"):
                items = [item async for item in call]
                return Answer("", repr(items))
            return Answer("", repr(await call))
        except grpc.aio.AioRpcError as error:
            return Answer(error.code().name, f"{error.details()} {error.trailing_metadata()}")

    async def state(self) -> tuple[str, list[str], list[str]]:
        """As the full client sees it: the waiting task's state, every task, every webhook."""
        who = {"a2a-version": "1.0", **credentials("full")}
        task = (await self.http.get(f"/tasks/{self.ids.waiting}", headers=who)).json()
        tasks = (await self.http.get("/tasks", headers=who)).json()["tasks"]
        path = f"/tasks/{self.ids.waiting}/pushNotificationConfigs"
        configs = (await self.http.get(path, headers=who)).json()["configs"]
        return (
            task["status"]["state"],
            sorted(t["id"] for t in tasks),
            sorted(c["id"] for c in configs),
        )


def _reason(details: list[dict[str, Any]]) -> str:
    return next(str(d["reason"]) for d in details if d["@type"].endswith("ErrorInfo"))


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    settings = Settings(
        store="memory://",
        principals=PRINCIPALS,
        jwt={"secret": SECRET},
        extended_card=True,
        push_max_attempts=1,
    )
    app = build_app(settings, waiting_agent)
    await app.service.engine.start()
    transport = httpx.ASGITransport(app=app)
    http = httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=10)
    grpc_server, port = await start_server(app.service, "127.0.0.1:0", app.jsonrpc.auth)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        full = {"a2a-version": "1.0", **credentials("full")}
        body = {"message": message("wait"), "configuration": {"returnImmediately": True}}
        waiting = (await http.post("/message:send", json=body, headers=full)).json()["task"]
        done = await http.post("/message:send", json={"message": message("hi")}, headers=full)
        path = f"/tasks/{waiting['id']}/pushNotificationConfigs"
        created = await http.post(path, json=_config(waiting["id"], "cfg"), headers=full)
        assert created.status_code == 200, created.text
        ids = Ids(waiting=waiting["id"], done=done.json()["task"]["id"])
        yield Server(app, http, a2a_pb2_grpc.A2AServiceStub(channel), ids)
    finally:
        await channel.close()
        await grpc_server.stop(None)
        await http.aclose()
        await app.service.engine.stop()


# --- the table ------------------------------------------------------------------------------


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_every_a2a_operation_has_a_grant_and_a_request_here(operation: str) -> None:
    assert required_actor(OPERATIONS[operation].command) is not None, (
        f"{operation}: add its row to accord.core._grants"
    )
    assert operation in REQUESTS, f"{operation}: add its requests to REQUESTS"


def test_the_table_grants_what_the_seed_declares() -> None:
    for item in seed_document()["paths"].values():
        for op in item.values():
            declared = op.get("x-ess-may-invoke") or op.get("x-ess-may-read")
            assert declared == [GRANTS[op["operationId"]]], op["operationId"]
    # The A2A operations the surface also serves have one row for both.
    surface_names = {op.name for op in surface_operations().values()}
    for operation in OPERATIONS.values():
        if operation.command in surface_names:
            assert operation.command in GRANTS


def test_a_command_missing_from_the_table_is_granted_to_nobody() -> None:
    assert required_actor("a2a.tasks.SomethingNew") is None
    with pytest.raises(A2AError) as refused:
        Binding.authorize(OPEN, "a2a.tasks.SomethingNew")
    assert refused.value.kind is ErrorKind.PERMISSION_DENIED


# --- every binding, every operation ---------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("operation", list(OPERATIONS))
async def test_every_operation_on_every_binding_checks_its_grant(
    server: Server, binding: str, operation: str
) -> None:
    actor = required_actor(OPERATIONS[operation].command)
    refused_code = "PERMISSION_DENIED"
    for who, actors in ACTORS.items():
        answer = await server.call(binding, operation, who)
        if actor in actors:
            assert answer.reason != refused_code, (who, answer.text)
        else:
            assert answer.reason == refused_code, (who, answer.text)
            assert "not granted" in answer.text


@pytest.mark.parametrize("binding", BINDINGS)
async def test_callers_without_the_grant_change_and_read_nothing(
    server: Server, binding: str
) -> None:
    before = await server.state()
    assert before[0] == "TASK_STATE_WORKING" and before[2] == ["cfg"]
    for who in ("worker", "nobody", "empty-jwt"):
        for operation in OPERATIONS:
            answer = await server.call(binding, operation, who)
            assert answer.reason == "PERMISSION_DENIED", (who, operation, answer.text)
            assert WEBHOOK_TOKEN not in answer.text and WEBHOOK_CREDENTIALS not in answer.text
    # No task sent, the working task not canceled, no webhook created or deleted.
    assert await server.state() == before


# --- the command surface checks the same table ----------------------------------------------


@pytest.mark.parametrize("path", sorted(surface_operations()))
async def test_the_surface_refuses_every_command_and_view_without_its_grant(
    server: Server, path: str
) -> None:
    op = surface_operations()[path]
    actor = GRANTS[op.name]
    for who, actors in ACTORS.items():
        headers = {"a2a-version": "1.0", **credentials(who)}
        if op.is_view:
            response = await server.http.get(path, headers=headers)
        else:
            response = await server.http.post(path, json={}, headers=headers)
        standard_refusal = response.status_code == 403 and response.json().get("refused") == (
            "not granted"
        )
        assert standard_refusal == (actor not in actors), (who, response.text)


@pytest.mark.parametrize(("path", "method"), [("/tasks/events", "GET"), ("/tasks/claims", "POST")])
async def test_the_remote_worker_endpoints_need_the_agent_grant(
    server: Server, path: str, method: str
) -> None:
    for who, actors in ACTORS.items():
        if AGENT_ACTOR in actors:
            continue  # granted: covered by tests/surface (the feed would stay open here)
        headers = {"a2a-version": "1.0", **credentials(who)}
        response = await server.http.request(method, path, json={"taskId": "x"}, headers=headers)
        assert (response.status_code, response.json()["refused"]) == (403, "not granted"), who
