"""accord mounted in another application (docs/server.md, "Mounting it in another
application"): a FastAPI application serving two accord agents under two prefixes beside a
route of its own, through a real uvicorn server, with their lifespans run by the host's; the
cards name the prefixed URLs; accord's client and the official SDK's talk to each agent, over
JSON-RPC and HTTP+JSON, streaming included."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
import uvicorn
from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState
from fastapi import FastAPI
from tests.processes import free_port
from tests.waiting import until

import accord
from accord.agents import RequestContext, TaskHandle
from accord.app import Settings
from accord.client import Client, TaskNotFoundError
from accord.config import ConfigError
from accord.server import A2AApplication
from accord.wire import TaskState as AccordState


async def shout(ctx: RequestContext, task: TaskHandle) -> None:
    await task.start_working()
    await task.update_artifact(text=ctx.text.upper(), last_chunk=True)
    await task.complete()


async def echo(ctx: RequestContext, task: TaskHandle) -> None:
    await task.start_working()
    await task.update_artifact(text=f"echo: {ctx.text}", last_chunk=True)
    await task.complete()


@dataclass
class Host:
    url: str
    shouting: A2AApplication
    echoing: A2AApplication


@pytest.fixture
async def host() -> AsyncIterator[Host]:
    shouting = accord.asgi(Settings(store="memory://"), shout)
    echoing = accord.asgi(Settings(store="memory://"), echo)
    app = FastAPI(lifespan=accord.lifespan(shouting, echoing))

    @app.get("/hello")
    async def hello() -> dict[str, str]:
        return {"hello": "from the host"}

    app.mount("/agents/shout", shouting)
    app.mount("/echo", echoing)
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, lifespan="on", log_level="warning",
        timeout_graceful_shutdown=1,
    )  # fmt: skip
    server = uvicorn.Server(config)
    running = asyncio.ensure_future(server._serve())  # serve() without taking over signals
    await until(lambda: server.started, "the host application to start")
    try:
        yield Host(f"http://127.0.0.1:{port}", shouting, echoing)
    finally:
        server.should_exit = True
        await running
    # The host's shutdown stopped both agents' engines.
    assert not shouting.service.engine.started
    assert not echoing.service.engine.started


async def test_the_cards_name_the_prefixed_urls(host: Host) -> None:
    async with httpx.AsyncClient(base_url=host.url) as http:
        assert (await http.get("/hello")).json() == {"hello": "from the host"}
        for prefix in ("/agents/shout", "/echo"):
            answer = await http.get(f"{prefix}/.well-known/agent-card.json")
            assert answer.status_code == 200
            interfaces = answer.json()["supportedInterfaces"]
            assert {i["url"] for i in interfaces} == {f"{host.url}{prefix}/"}
            assert {i["protocolBinding"] for i in interfaces} == {"JSONRPC", "HTTP+JSON"}
            assert answer.headers["vary"] == "Host"
            assert (await http.get(f"{prefix}/healthz")).status_code == 200
        # The Host a client names (without public_url); without credentials only loopback
        # names are answered, as at the root.
        named = await http.get(
            "/echo/.well-known/agent-card.json", headers={"Host": "localhost:8443"}
        )
        assert named.json()["supportedInterfaces"][0]["url"] == "http://localhost:8443/echo/"
        foreign = await http.get(
            "/echo/.well-known/agent-card.json", headers={"Host": "agents.example"}
        )
        assert foreign.status_code == 403
        # Paths outside any prefix are the host's: not accord's.
        assert (await http.get("/.well-known/agent-card.json")).status_code == 404


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_accords_client_talks_to_each_mounted_agent(host: Host, binding: str) -> None:
    async with Client.connect(f"{host.url}/agents/shout", binding=binding) as shouting:
        task = shouted = await shouting.send("hello")
        assert task.status.state is AccordState.COMPLETED
        assert task.artifacts[0].parts[0].text == "HELLO"
        assert (await shouting.get_task(task.id)).id == task.id
        events = [event async for event in shouting.stream("loud")]
        assert events  # the stream went through the mount and ended
    async with Client.connect(f"{host.url}/echo", binding=binding) as echoing:
        task = await echoing.send("hi")
        assert task.artifacts[0].parts[0].text == "echo: hi"
        # Each agent has its own store: the other's task is not found here.
        with pytest.raises(TaskNotFoundError):
            await echoing.get_task(shouted.id)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_official_sdk_client_talks_to_each_mounted_agent(
    host: Host, binding: str
) -> None:
    for prefix, text, expected in (("/agents/shout", "hey", "HEY"), ("/echo", "hey", "echo: hey")):
        for streaming in (False, True):
            config = ClientConfig(streaming=streaming, supported_protocol_bindings=[binding])
            async with await create_client(f"{host.url}{prefix}", client_config=config) as client:
                request = SendMessageRequest(
                    message=Message(
                        role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)]
                    )
                )
                events = [event async for event in client.send_message(request)]
                texts = [
                    part.text
                    for event in events
                    for artifact in (
                        [event.artifact_update.artifact]
                        if event.WhichOneof("payload") == "artifact_update"
                        else list(event.task.artifacts)
                        if event.WhichOneof("payload") == "task"
                        else []
                    )
                    for part in artifact.parts
                ]
                assert expected in texts
                last = events[-1]
                state = (
                    last.task.status.state
                    if last.WhichOneof("payload") == "task"
                    else last.status_update.status.state
                )
                assert state == TaskState.TASK_STATE_COMPLETED


async def test_a_mounted_agent_whose_lifespan_did_not_run_says_so() -> None:
    forgotten = accord.asgi(Settings(store="memory://"), echo)
    app = FastAPI()
    app.mount("/echo", forgotten)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost"
    ) as http:
        answer = await http.get("/echo/.well-known/agent-card.json")
        assert answer.status_code == 503
        assert "accord.lifespan" in answer.json()["error"]["message"]


def test_asgi_takes_settings_a_file_or_overrides_and_refuses_grpc(tmp_path: object) -> None:
    assert accord.asgi(store="memory://").service.engine is not None
    with pytest.raises(ConfigError, match="gRPC"):
        accord.asgi(Settings(store="memory://", grpc_port=50051))
    with pytest.raises(ConfigError, match="no_such_setting"):
        accord.asgi(Settings(store="memory://"), no_such_setting=1)


KEY = "mounted-client-key-0123"


@pytest.mark.parametrize("public_url", ["https://agents.example", "https://agents.example/a"])
async def test_public_url_names_the_mount_on_both_cards(public_url: str) -> None:
    principal = {
        "identity": "alice",
        "actors": ["a2a.tasks.Client", "a2a.discovery.Client"],
        "api_key": KEY,
    }
    mounted = accord.asgi(
        Settings(
            store="memory://", public_url=public_url, principals=[principal], extended_card=True
        ),
        echo,
    )
    app = FastAPI()
    app.mount("/a", mounted)
    async with (
        mounted.running(),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://whatever.example"
        ) as http,
    ):
        card = (await http.get("/a/.well-known/agent-card.json")).json()
        assert {i["url"] for i in card["supportedInterfaces"]} == {"https://agents.example/a/"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}
        headers = {"X-API-Key": KEY, "A2A-Version": "1.0"}
        extended = (await http.post("/a/", json=body, headers=headers)).json()["result"]
        assert {i["url"] for i in extended["supportedInterfaces"]} == {"https://agents.example/a/"}


async def test_the_dashboard_is_below_the_prefix(host: Host) -> None:
    async with httpx.AsyncClient(base_url=host.url) as http:
        moved = await http.get("/echo/ui")
        assert moved.status_code == 308
        assert moved.headers["location"] == "/echo/ui/"
        page = await http.get("/echo/ui/")
        assert page.status_code == 200 and "<html" in page.text.lower()
        session = await http.get("/echo/ui/api/session")
        assert session.status_code == 200, session.text
