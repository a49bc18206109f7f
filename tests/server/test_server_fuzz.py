"""Random requests against both bindings, in-process: whatever arrives, the server answers
with a protocol error or a result — never a 5xx, never JSON-RPC -32603, never an exception
escaping the application, never an error logged."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.agents._api import RequestContext, TaskHandle
from accord.app._build import build_app
from accord.app._settings import Principal, Settings
from accord.server._app import A2AApplication
from accord.service._operations import OPERATIONS

EXAMPLES = 200


async def agent(ctx: RequestContext, task: TaskHandle) -> None:
    """Echo. (No task is left waiting for input: a subscription to one stays open by design,
    and httpx's ASGI transport only returns a response once it is complete.)"""
    await task.start_working()
    await task.update_artifact(text=f"echo: {ctx.text}", last_chunk=True)
    await task.complete()


@dataclass
class Target:
    loop: asyncio.AbstractEventLoop
    app: A2AApplication
    http: httpx.AsyncClient
    task_ids: list[str]

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, 10))


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    loop = asyncio.new_event_loop()
    settings_ = Settings(
        store="memory://",
        extended_card=True,
        require_auth=False,
        bearer_tokens={"tok": Principal(identity="fuzzer", tenant="t1")},
        max_body_bytes=64 * 1024,
        max_parts=16,
        max_depth=8,
        heartbeat_s=0.2,
    )
    app = build_app(settings_, agent)
    http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost", timeout=10
    )

    async def setup() -> list[str]:
        await app.service.engine.start()
        ids = []
        for text in ("hi", "there"):
            body = {
                "message": {
                    "messageId": f"seed-{text}",
                    "role": "ROLE_USER",
                    "parts": [{"text": text}],
                }
            }
            response = await http.post("/message:send", json=body, headers={"A2A-Version": "1.0"})
            ids.append(response.json()["task"]["id"])
        return ids

    task_ids = loop.run_until_complete(setup())
    yield Target(loop, app, http, task_ids)
    loop.run_until_complete(http.aclose())
    loop.run_until_complete(app.service.engine.stop())
    loop.close()


# --- strategies ----------------------------------------------------------------------------

FIELDS = [
    "message",
    "messageId",
    "message_id",
    "role",
    "parts",
    "text",
    "raw",
    "url",
    "data",
    "mediaType",
    "media_type",
    "filename",
    "metadata",
    "contextId",
    "context_id",
    "taskId",
    "task_id",
    "id",
    "historyLength",
    "history_length",
    "configuration",
    "returnImmediately",
    "acceptedOutputModes",
    "taskPushNotificationConfig",
    "authentication",
    "scheme",
    "credentials",
    "token",
    "pageSize",
    "pageToken",
    "status",
    "statusTimestampAfter",
    "includeArtifacts",
    "tenant",
    "extensions",
    "referenceTaskIds",
    "kind",
]
ENUMS = [
    "ROLE_USER",
    "ROLE_AGENT",
    "ROLE_UNSPECIFIED",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_WORKING",
    "TASK_STATE_UNSPECIFIED",
    "user",
    "bogus",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(ENUMS),
    st.sampled_from(["aGk=", "!!notbase64", "2025-01-01T00:00:00Z", "1e999", ""]),
)
keys = st.one_of(st.sampled_from(FIELDS), st.text(max_size=10))
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=5),
    ),
    max_leaves=30,
)


def deep(depth: int) -> Any:
    value: Any = "leaf"
    for index in range(depth):
        value = {"k": value} if index % 2 else [value]
    return value


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly well-formed messages with a few fields replaced by arbitrary JSON."""
    part: dict[str, Any] = draw(
        st.sampled_from(
            [{"text": "hi"}, {"raw": "aGk="}, {"url": "https://x"}, {"data": {"a": 1}}, {}]
        )
    )
    msg: dict[str, Any] = {
        draw(st.sampled_from(["messageId", "message_id"])): draw(st.text(max_size=8)),
        "role": draw(st.sampled_from(ENUMS)),
        "parts": draw(st.one_of(st.just([part]), st.lists(json_values, max_size=3))),
    }
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
        msg[name] = draw(json_values)
    if draw(st.booleans()):
        msg["metadata"] = deep(draw(st.integers(0, 40)))
    return msg


@st.composite
def params(draw: st.DrawFn, task_ids: list[str]) -> Any:
    shape = draw(st.integers(0, 4))
    if shape == 0:
        return draw(json_values)
    ids = st.one_of(st.sampled_from(task_ids), st.text(max_size=12))
    base: dict[str, Any] = {}
    if shape in (1, 2):
        base["message"] = draw(messages())
        if draw(st.booleans()):
            base["message"]["taskId"] = draw(ids)
        if draw(st.booleans()):
            base["configuration"] = draw(json_values)
    else:
        base[draw(st.sampled_from(["id", "taskId", "task_id"]))] = draw(ids)
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
        base[name] = draw(json_values)
    return base


@st.composite
def bodies(draw: st.DrawFn, payload: Any) -> bytes:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.binary(max_size=64))
    if kind == 1:
        return b'{"a":' * draw(st.integers(1, 5000))  # deep, truncated
    if kind == 2:
        return json.dumps(payload).encode()[: draw(st.integers(0, 40))]
    return json.dumps(payload).encode()


header_values = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
    st.sampled_from(
        [
            "1.0",
            "1.0.1",
            "99",
            "",
            "0.3",
            "application/json",
            "text/plain",
            "application/a2a+json",
            "Bearer tok",
            "Bearer",
            "18446744073709551617",
            "-1",
            "text/event-stream",
            "https://example.com/ext",
        ]
    ),
)
headers = st.dictionaries(
    st.sampled_from(
        [
            "A2A-Version",
            "A2A-Extensions",
            "Content-Type",
            "Accept",
            "Last-Event-ID",
            "Authorization",
            "X-API-Key",
            "If-None-Match",
            "Content-Length-Ignored",
        ]
    ),
    header_values,
    max_size=5,
)

PATH_TEMPLATES = [
    "/message:send",
    "/message:stream",
    "/tasks",
    "/tasks/{id}",
    "/tasks/{id}:cancel",
    "/tasks/{id}:subscribe",
    "/tasks/{id}/pushNotificationConfigs",
    "/tasks/{id}/pushNotificationConfigs/{cfg}",
    "/extendedAgentCard",
    "/.well-known/agent-card.json",
    "/",
    "/{seg}",
    "/{seg}/{seg}:{seg}",
]


@st.composite
def paths(draw: st.DrawFn, task_ids: list[str]) -> str:
    segment = st.text(
        alphabet=st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="/?#%"),
        min_size=1,  # an empty segment could make "//x" read as a URL authority
        max_size=8,
    )
    template = draw(st.sampled_from(PATH_TEMPLATES))
    path = template.replace("{id}", draw(st.one_of(st.sampled_from(task_ids), segment)))
    path = path.replace("{cfg}", draw(segment))
    while "{seg}" in path:
        path = path.replace("{seg}", draw(segment), 1)
    if draw(st.booleans()):
        path = "/" + draw(st.sampled_from(["t1", "other", "a:b"])) + path
    return path


query = st.dictionaries(
    st.sampled_from(
        [
            "historyLength",
            "pageSize",
            "pageToken",
            "status",
            "contextId",
            "includeArtifacts",
            "statusTimestampAfter",
            "A2A-Version",
            "tenant",
            "history_length",
            "id",
        ]
    ),
    st.one_of(header_values, st.integers(-(2**70), 2**70).map(str)),
    max_size=4,
)


# --- checks --------------------------------------------------------------------------------


def check(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text[:500]
    if response.headers.get("content-type", "").startswith("application/json") and response.content:
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            assert body["error"].get("code") != -32603, body


@pytest.fixture
def no_errors_logged(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    with caplog.at_level(logging.ERROR, logger="accord"):
        yield
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors[0].getMessage()


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(data=st.data())
def test_jsonrpc_never_fails_internally(
    target: Target, no_errors_logged: None, data: st.DataObject
) -> None:
    envelope: dict[str, Any] = {
        "jsonrpc": data.draw(st.sampled_from(["2.0", "2.0", "1.0", 2])),
        "method": data.draw(st.one_of(st.sampled_from(list(OPERATIONS)), json_values)),
        "params": data.draw(params(target.task_ids)),
    }
    if data.draw(st.booleans()):
        envelope["id"] = data.draw(json_values)
    for name in data.draw(
        st.lists(st.sampled_from(["id", "params", "method", "jsonrpc"]), max_size=1)
    ):
        envelope.pop(name, None)
    body = data.draw(bodies(envelope))
    sent_headers = {"A2A-Version": "1.0", "Content-Type": "application/json"}
    sent_headers.update(data.draw(headers))
    response = target.run(target.http.post("/", content=body, headers=sent_headers))
    check(response)


@FUZZ
@given(data=st.data())
def test_rest_never_fails_internally(
    target: Target, no_errors_logged: None, data: st.DataObject
) -> None:
    method = data.draw(st.sampled_from(["GET", "POST", "POST", "DELETE", "PUT", "PATCH", "HEAD"]))
    path = data.draw(paths(target.task_ids))
    sent_headers = {"A2A-Version": "1.0"}
    sent_headers.update(data.draw(headers))
    body = data.draw(bodies(data.draw(params(target.task_ids)))) if method == "POST" else b""
    response = target.run(
        target.http.request(
            method, path, content=body, headers=sent_headers, params=data.draw(query)
        )
    )
    check(response)
