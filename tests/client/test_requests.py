"""What the client puts on the wire, and how it reads failures (against a mock HTTP peer)."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from accord.client import (
    ApiKey,
    BearerToken,
    CallOptions,
    Client,
    ConnectionFailedError,
    InternalError,
    InvalidResponseError,
    RequestTimeoutError,
    TaskNotFoundError,
    UnauthenticatedError,
    UnexpectedStatusError,
)
from accord.wire._model import (
    AgentCard,
    AgentInterface,
    APIKeySecurityScheme,
    SecurityScheme,
    TaskState,
)

TASK = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}

Handler = Callable[[httpx.Request], httpx.Response]


def make_card(binding: str, url: str, tenant: str = "") -> AgentCard:
    return AgentCard(
        name="mock",
        description="d",
        version="1",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version="1.0", tenant=tenant)
        ],
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-Agent-Key")
            )
        },
    )


class Recorder:
    def __init__(self, respond: Handler) -> None:
        self.requests: list[httpx.Request] = []
        self._respond = respond

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._respond(request)

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]


def client_for(
    binding: str, respond: Handler, tenant: str = "", **kwargs: object
) -> tuple[Client, Recorder]:
    recorder = Recorder(respond)
    url = "http://agent/rpc" if binding == "JSONRPC" else "http://agent/rest"
    http = httpx.AsyncClient(transport=httpx.MockTransport(recorder))
    return Client(make_card(binding, url, tenant), http_client=http, **kwargs), recorder  # type: ignore[arg-type]


def rpc_result(result: object) -> Handler:
    def respond(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})

    return respond


async def test_jsonrpc_request_headers_tenant_and_body() -> None:
    client, rec = client_for(
        "JSONRPC",
        rpc_result(TASK),
        tenant="acme",
        extensions=["https://ex/a"],
        credentials=BearerToken(lambda: "tok"),
    )
    task = await client.get_task(
        "t1", history_length=0, options=CallOptions(extensions=["https://ex/b"])
    )
    assert task.id == "t1" and task.status.state is TaskState.COMPLETED
    req = rec.last
    assert req.method == "POST" and str(req.url) == "http://agent/rpc"
    assert req.headers["A2A-Version"] == "1.0"
    assert req.headers["A2A-Extensions"] == "https://ex/a,https://ex/b"
    assert req.headers["Authorization"] == "Bearer tok"
    assert req.headers["Content-Type"] == "application/json"
    body = json.loads(req.content)
    assert body["jsonrpc"] == "2.0" and body["method"] == "GetTask"
    assert body["params"] == {"id": "t1", "tenant": "acme", "historyLength": 0}


async def test_send_text_builds_a_user_message() -> None:
    client, rec = client_for("JSONRPC", rpc_result({"task": TASK}))
    result = await client.send("hi", context_id="c1", return_immediately=True, metadata={"k": 1})
    assert result.id == "t1"  # type: ignore[union-attr]
    params = json.loads(rec.last.content)["params"]
    assert params["message"]["role"] == "ROLE_USER"
    assert params["message"]["parts"] == [{"text": "hi"}]
    assert params["message"]["contextId"] == "c1"
    assert params["message"]["messageId"]
    assert params["configuration"] == {"returnImmediately": True}
    assert params["metadata"] == {"k": 1}


async def test_api_key_header_named_by_the_card() -> None:
    client, rec = client_for("JSONRPC", rpc_result(TASK), credentials=ApiKey("s3cret"))
    await client.get_task("t1")
    assert rec.last.headers["X-Agent-Key"] == "s3cret"


def rest_ok(body: object, status: int = 200) -> Handler:
    return lambda request: httpx.Response(status, json=body)


@pytest.mark.parametrize(
    ("call", "method", "path"),
    [
        (
            lambda c: c.get_task("t/1", history_length=2),
            "GET",
            "/rest/acme/tasks/t%2F1?historyLength=2",
        ),
        (lambda c: c.cancel("t1"), "POST", "/rest/acme/tasks/t1:cancel"),
        (
            lambda c: c.get_push_config("t1", "p1"),
            "GET",
            "/rest/acme/tasks/t1/pushNotificationConfigs/p1",
        ),
        (
            lambda c: c.delete_push_config("t1", "p1"),
            "DELETE",
            "/rest/acme/tasks/t1/pushNotificationConfigs/p1",
        ),
        (lambda c: c.get_extended_card(), "GET", "/rest/acme/extendedAgentCard"),
    ],
)
async def test_rest_paths_carry_the_tenant(
    call: Callable[[Client], object], method: str, path: str
) -> None:
    bodies = {
        "GET /rest/acme/extendedAgentCard": {"name": "x", "description": "d", "version": "1"},
        "GET /rest/acme/tasks/t1/pushNotificationConfigs/p1": {"url": "https://h", "id": "p1"},
    }

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=bodies.get(f"{request.method} {request.url.path}", TASK))

    client, rec = client_for("HTTP+JSON", respond, tenant="acme")
    await call(client)  # type: ignore[misc]
    req = rec.last
    assert req.method == method
    assert req.url.raw_path.decode() == path
    assert req.headers["A2A-Version"] == "1.0"


async def test_rest_list_tasks_query_parameters() -> None:
    client, rec = client_for("HTTP+JSON", rest_ok({"tasks": [TASK], "nextPageToken": ""}))
    page = await client.list_tasks_page(
        context_id="c1",
        status=TaskState.WORKING,
        page_size=5,
        include_artifacts=False,
        history_length=0,
    )
    assert [t.id for t in page.tasks] == ["t1"]
    assert dict(rec.last.url.params) == {
        "contextId": "c1",
        "status": "TASK_STATE_WORKING",
        "pageSize": "5",
        "historyLength": "0",
        "includeArtifacts": "false",
    }


async def test_rest_send_body_omits_the_tenant_that_is_in_the_path() -> None:
    client, rec = client_for("HTTP+JSON", rest_ok({"task": TASK}), tenant="acme")
    await client.send("hi")
    assert rec.last.url.path == "/rest/acme/message:send"
    body = json.loads(rec.last.content)
    assert "tenant" not in body and body["message"]["parts"] == [{"text": "hi"}]


async def test_list_tasks_follows_every_page() -> None:
    pages = {
        "": {"tasks": [TASK, {**TASK, "id": "t2"}], "nextPageToken": "p2"},
        "p2": {"tasks": [{**TASK, "id": "t3"}], "nextPageToken": ""},
    }

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=pages[request.url.params.get("pageToken", "")])

    client, rec = client_for("HTTP+JSON", respond)
    assert [t.id async for t in client.list_tasks(page_size=2)] == ["t1", "t2", "t3"]
    assert len(rec.requests) == 2


async def test_rest_error_body_becomes_the_typed_error() -> None:
    body = {
        "error": {
            "code": 404,
            "status": "NOT_FOUND",
            "message": "Task not found",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_FOUND",
                    "domain": "a2a-protocol.org",
                }
            ],
        }
    }
    client, _ = client_for("HTTP+JSON", rest_ok(body, 404))
    with pytest.raises(TaskNotFoundError) as info:
        await client.get_task("nope")
    assert info.value.message == "Task not found" and info.value.code == 404


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_bare_http_failures(binding: str) -> None:
    client, _ = client_for(binding, lambda r: httpx.Response(401, text="no"))
    with pytest.raises(UnauthenticatedError):
        await client.get_task("t1")
    client, _ = client_for(binding, lambda r: httpx.Response(502, text="Bad gateway"))
    with pytest.raises(UnexpectedStatusError) as info:
        await client.get_task("t1")
    assert info.value.status_code == 502


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_malformed_answers(binding: str) -> None:
    client, _ = client_for(binding, lambda r: httpx.Response(200, text="<html>"))
    with pytest.raises(InvalidResponseError):
        await client.get_task("t1")


async def test_connection_failure_and_timeout() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    client, _ = client_for("JSONRPC", refuse)
    with pytest.raises(ConnectionFailedError):
        await client.get_task("t1")
    client, _ = client_for("HTTP+JSON", slow)
    with pytest.raises(RequestTimeoutError):
        await client.get_task("t1")


async def test_card_is_fetched_from_the_well_known_path() -> None:
    card = {
        "name": "remote",
        "description": "d",
        "version": "1",
        "supportedInterfaces": [
            {"url": "http://agent/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
    }
    rec = Recorder(lambda r: httpx.Response(200, json=card))
    http = httpx.AsyncClient(transport=httpx.MockTransport(rec))
    async with Client.connect("http://agent/", http_client=http) as client:
        assert client.card.name == "remote" and client.binding == "HTTP+JSON"
    assert rec.requests[0].url.path == "/.well-known/agent-card.json"
    assert rec.requests[0].headers["A2A-Version"] == "1.0"


def sse(*frames: str) -> Handler:
    body = "".join(frames).encode()
    return lambda request: httpx.Response(
        200, content=body, headers={"content-type": "text/event-stream"}
    )


TASK_EVENT = json.dumps({"task": TASK | {"status": {"state": "TASK_STATE_WORKING"}}})


async def test_jsonrpc_error_frame_mid_stream_is_raised_typed() -> None:
    client, rec = client_for(
        "JSONRPC",
        sse(
            f'data: {{"jsonrpc":"2.0","id":1,"result":{TASK_EVENT}}}\n\n',
            'data: {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}\n\n',
        ),
    )
    seen = []
    with pytest.raises(InternalError, match="boom"):
        async for event in client.stream("hi"):
            seen.append(event.which)
    assert seen == ["task"]
    assert len(rec.requests) == 1  # a protocol error is not a broken stream: no resubscribe
    assert rec.last.headers["Accept"] == "text/event-stream"


async def test_rest_error_event_mid_stream_is_raised_typed() -> None:
    client, rec = client_for(
        "HTTP+JSON",
        sse(
            f"data: {TASK_EVENT}\n\n",
            'event: error\ndata: {"error":{"code":500,"status":"INTERNAL","message":"oops"}}\n\n',
        ),
    )
    with pytest.raises(InternalError, match="oops"):
        async for _ in client.stream("hi"):
            pass
    assert rec.last.url.path == "/rest/message:stream"


async def test_stream_refused_before_it_starts() -> None:
    client, _ = client_for(
        "JSONRPC",
        lambda r: httpx.Response(
            200, json={"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "nope"}}
        ),
    )
    with pytest.raises(TaskNotFoundError):
        async for _ in client.subscribe("t1"):
            pass
