"""A2A-Version and A2A-Extensions on both bindings."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from server_helpers import message, reason, rest_reason, rpc, serve_app

from accord.agents._echo import echo
from accord.core._limits import Limits
from accord.engine import Engine, EngineConfig
from accord.server._app import A2AApplication
from accord.service._card import CardSettings, build_card
from accord.service._operations import Service
from accord.store import open_store
from accord.wire._model import AgentExtension

REQUIRED = "https://example.com/ext/required/v1"
OPTIONAL = "https://example.com/ext/optional/v1"


async def test_version_from_the_header(http: httpx.AsyncClient) -> None:
    for version in ("1.0", "1.0.5", "1.0.0"):
        response = await http.post(
            "/message:send", json={"message": message()}, headers={"A2A-Version": version}
        )
        assert response.status_code == 200, version


async def test_version_from_the_query(http: httpx.AsyncClient) -> None:
    del http.headers["A2A-Version"]
    response = await http.post("/message:send?A2A-Version=1.0", json={"message": message()})
    assert response.status_code == 200
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message()}}
    reply = await http.post("/?A2A-Version=1.0", json=body)
    assert "result" in reply.json()


@pytest.mark.parametrize("version", [None, "", "0.3", "2.0", "99", "1.1", "one"])
async def test_other_versions_are_refused(http: httpx.AsyncClient, version: str | None) -> None:
    headers = {} if version is None else {"A2A-Version": version}
    del http.headers["A2A-Version"]
    response = await http.post("/message:send", json={"message": message()}, headers=headers)
    assert response.status_code == 400
    assert rest_reason(response) == "VERSION_NOT_SUPPORTED"
    reply = await rpc(http, "GetTask", {"id": "x"}, headers=headers)
    assert reply["error"]["code"] == -32009
    assert reason(reply["error"]["data"]) == "VERSION_NOT_SUPPORTED"


@pytest.fixture
async def ext_http() -> AsyncIterator[httpx.AsyncClient]:
    """An agent that declares one required and one optional extension."""
    card = build_card(
        CardSettings(
            extensions=[
                AgentExtension(uri=REQUIRED, required=True),
                AgentExtension(uri=OPTIONAL),
            ]
        )
    )
    engine = Engine(open_store("memory://"), echo, EngineConfig(limits=Limits()))
    async with serve_app(A2AApplication(Service(engine=engine, card=card))) as client:
        yield client


async def test_a_required_extension_must_be_requested(ext_http: httpx.AsyncClient) -> None:
    response = await ext_http.post("/message:send", json={"message": message()})
    assert response.status_code == 400
    assert rest_reason(response) == "EXTENSION_SUPPORT_REQUIRED"
    reply = await rpc(ext_http, "SendMessage", {"message": message()})
    assert reply["error"]["code"] == -32008
    only_optional = await ext_http.get("/tasks", headers={"A2A-Extensions": OPTIONAL})
    assert rest_reason(only_optional) == "EXTENSION_SUPPORT_REQUIRED"


async def test_activated_extensions_are_echoed(ext_http: httpx.AsyncClient) -> None:
    requested = f"{REQUIRED}, https://example.com/unknown ,{OPTIONAL}"
    response = await ext_http.post(
        "/message:send", json={"message": message()}, headers={"A2A-Extensions": requested}
    )
    assert response.status_code == 200
    echoed = [uri.strip() for uri in response.headers["a2a-extensions"].split(",")]
    assert sorted(echoed) == sorted([REQUIRED, OPTIONAL])  # the unknown one is not activated
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
    reply = await ext_http.post("/", json=body, headers={"A2A-Extensions": REQUIRED})
    assert reply.headers["a2a-extensions"] == REQUIRED
    assert "result" in reply.json()


async def test_unknown_extensions_are_ignored(http: httpx.AsyncClient) -> None:
    response = await http.post(
        "/message:send",
        json={"message": message()},
        headers={"A2A-Extensions": "https://example.com/ext/v1,https://example.com/ext/v2"},
    )
    assert response.status_code == 200
    assert "a2a-extensions" not in response.headers
