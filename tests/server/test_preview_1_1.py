"""The A2A 1.1 preview (``a2a_preview = ["1.1"]``, docs/preview-1.1.md) on every binding,
through accord's client: Task.generation counts by exactly one per streamed change, a
long-polling GetTask wakes on the task's next event and times out cleanly, a stale
ifGenerationMatch is refused (JSON-RPC -32010, HTTP 409, gRPC ABORTED); and with the preview
off (the default) none of it is read or emitted.

The app runs in the test's event loop: accord's HTTP server and its gRPC server on loopback."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from tests.processes import free_port
from tests.waiting import until

from accord.agents import RequestContext, TaskHandle
from accord.app import Settings, build_app, load
from accord.client import Client, TaskGenerationMismatchError
from accord.config import ConfigError
from accord.grpc._server import start_server
from accord.server._runner import serve
from accord.service import Service
from accord.wire import UNSET, SendMessageConfiguration, StreamResponse, Task, TaskState

BINDINGS = ("JSONRPC", "HTTP+JSON", "GRPC")
PREVIEW = {"a2a_preview": ["1.1"]}


async def agent(ctx: RequestContext, task: TaskHandle) -> None:
    """``tick N``: N artifact chunks, then completes; ``ask``: requires input, and the next
    message completes it; anything else completes at once."""
    word, _, rest = ctx.text.partition(" ")
    if ctx.task is not None:
        await task.start_working()
        await task.update_artifact(text=f"got: {ctx.text}", last_chunk=True)
        await task.complete()
    elif word == "tick":
        await task.start_working()
        count = int(rest or 3)
        for n in range(count):
            await task.update_artifact(
                text=f"{n};", artifact_id="ticks", append=n > 0, last_chunk=n == count - 1
            )
        await task.complete()
    elif word == "ask":
        await task.require_input("what else?")
    else:
        await task.complete()


@dataclasses.dataclass
class Running:
    url: str
    service: Service


@asynccontextmanager
async def running(**settings: Any) -> AsyncIterator[Running]:
    """The app on accord's HTTP server and its gRPC server, both on free loopback ports."""
    port, grpc_port = free_port(), free_port()
    settings.setdefault("store", "memory://")
    config = Settings(port=port, grpc_port=grpc_port, **settings)
    app = build_app(config, agent)
    stop = asyncio.Event()
    listening: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    http = asyncio.ensure_future(
        serve(app, "127.0.0.1", port, stop=stop, on_listening=listening.set_result)
    )
    await asyncio.wait({http, listening}, return_when=asyncio.FIRST_COMPLETED)
    grpc_server, _ = await start_server(
        app.service, f"127.0.0.1:{grpc_port}", app.jsonrpc.auth, require_auth=False
    )
    try:
        yield Running(f"http://127.0.0.1:{port}", app.service)
    finally:
        await grpc_server.stop(None)
        stop.set()
        await asyncio.wait_for(http, 10)


@pytest.fixture
async def preview() -> AsyncIterator[Running]:
    async with running(**PREVIEW) as server:
        yield server


@pytest.fixture
async def plain() -> AsyncIterator[Running]:
    async with running() as server:
        yield server


def generation_of(event: StreamResponse) -> Any:
    return getattr(event, event.which).generation


# --- generations ---------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
async def test_generation_counts_each_streamed_change_exactly_once(
    preview: Running, binding: str
) -> None:
    async with Client.connect(preview.url, binding=binding) as client:
        events = [e async for e in client.stream("tick 3")]
        # task, working, three chunks, completed: 1 … 6, one each.
        assert [e.which for e in events] == ["task", "status_update"] + ["artifact_update"] * 3 + [
            "status_update"
        ]
        assert [generation_of(e) for e in events] == [1, 2, 3, 4, 5, 6]
        done = await client.get_task(events[0].task.id)
        assert done.generation == 6

        # A second turn goes on from where the first ended.
        waiting = await client.send("ask")
        assert isinstance(waiting, Task)
        assert (waiting.status.state, waiting.generation) == (TaskState.INPUT_REQUIRED, 2)
        turn = [e async for e in client.stream("now", task_id=waiting.id)]
        assert turn[0].which == "task"
        assert [generation_of(e) for e in turn] == [2, 3, 4, 5]
        assert (await client.get_task(waiting.id)).generation == 5


async def test_generation_in_a_stored_snapshot_and_a_resumed_subscription(preview: Running) -> None:
    """GetTask's stored ProtoJSON (the fast path) and a subscription's first event carry it."""
    async with Client.connect(preview.url, binding="JSONRPC") as client:
        done = await client.send("tick 2")
        assert isinstance(done, Task)
    async with httpx.AsyncClient(base_url=preview.url, headers={"A2A-Version": "1.0"}) as http:
        raw = await http.get(f"/tasks/{done.id}")
        assert raw.json()["generation"] == 5


async def test_generations_go_on_after_a_restart(tmp_path: Any) -> None:
    """The count is the task's, in its log: a server started again on the same store goes on
    from where the first one stopped."""
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    async with running(**PREVIEW, store=store) as first, Client.connect(first.url) as client:
        waiting = await client.send("ask")
        assert isinstance(waiting, Task) and waiting.generation == 2
    async with running(**PREVIEW, store=store) as again, Client.connect(again.url) as client:
        assert (await client.get_task(waiting.id)).generation == 2
        turn = [e async for e in client.stream("now", task_id=waiting.id)]
        assert [generation_of(e) for e in turn] == [2, 3, 4, 5]


# --- long-polling --------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_long_poll_wakes_on_the_next_event(preview: Running, binding: str) -> None:
    async with Client.connect(preview.url, binding=binding) as client:
        waiting = await client.send("ask")
        assert isinstance(waiting, Task) and waiting.generation == 2
        # Past the generation asked about: at once.
        assert (await client.get_task(waiting.id, current_generation=1)).generation == 2
        poll = asyncio.ensure_future(client.get_task(waiting.id, current_generation=2))
        await until(lambda: preview.service.preview.waiting == 1, "the poll to be held")
        assert not poll.done()
        await client.send("go on", task_id=waiting.id, return_immediately=True)
        woken = await asyncio.wait_for(poll, 10)
        assert woken.generation is not UNSET and woken.generation > 2
        assert preview.service.preview.waiting == 0


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_long_poll_times_out_cleanly(binding: str) -> None:
    async with (
        running(**PREVIEW, long_poll_max_s=0.3) as server,
        Client.connect(server.url, binding=binding) as client,
    ):
        waiting = await client.send("ask")
        assert isinstance(waiting, Task)
        loop = asyncio.get_running_loop()
        started = loop.time()
        same = await client.get_task(waiting.id, current_generation=2)
        assert loop.time() - started >= 0.3
        assert (same.status.state, same.generation) == (TaskState.INPUT_REQUIRED, 2)
        assert server.service.preview.waiting == 0
        # The task is still there to go on.
        done = await client.send("go on", task_id=waiting.id)
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED


async def test_past_the_cap_a_long_poll_answers_at_once() -> None:
    async with (
        running(**PREVIEW, long_poll_max_waiting=0, long_poll_max_s=60) as server,
        Client.connect(server.url) as client,
    ):
        waiting = await client.send("ask")
        assert isinstance(waiting, Task)
        same = await asyncio.wait_for(client.get_task(waiting.id, current_generation=2), 5)
        assert same.generation == 2


# --- ifGenerationMatch ---------------------------------------------------------------------


def matching(generation: int) -> SendMessageConfiguration:
    return SendMessageConfiguration(if_generation_match=generation)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_stale_if_generation_match_is_refused(preview: Running, binding: str) -> None:
    async with Client.connect(preview.url, binding=binding) as client:
        waiting = await client.send("ask")
        assert isinstance(waiting, Task) and waiting.generation == 2
        with pytest.raises(TaskGenerationMismatchError) as refused:
            await client.send("late", task_id=waiting.id, configuration=matching(1))
        code = {"JSONRPC": -32010, "HTTP+JSON": 409, "GRPC": "ABORTED"}[binding]
        assert refused.value.code == code
        assert refused.value.reason == "TASK_GENERATION_MISMATCH"
        assert refused.value.metadata == {
            "taskId": waiting.id,
            "expectedGeneration": "1",
            "currentGeneration": "2",
        }
        unchanged = await client.get_task(waiting.id)
        assert (unchanged.generation, len(unchanged.history)) == (2, len(waiting.history))
        # The current one is taken.
        done = await client.send("now", task_id=waiting.id, configuration=matching(2))
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED


async def test_if_generation_match_is_ignored_for_a_new_task(preview: Running) -> None:
    async with Client.connect(preview.url) as client:
        created = await client.send("hello", configuration=matching(41))
        assert isinstance(created, Task) and created.status.state is TaskState.COMPLETED


# --- off by default ------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
async def test_without_the_preview_nothing_of_it_is_read_or_emitted(
    plain: Running, binding: str
) -> None:
    async with Client.connect(plain.url, binding=binding) as client:
        events = [e async for e in client.stream("tick 2")]
        assert all(generation_of(e) is UNSET for e in events)
        waiting = await client.send("ask")
        assert isinstance(waiting, Task) and waiting.generation is UNSET
        # currentGeneration is not read: GetTask answers at once.
        same = await asyncio.wait_for(client.get_task(waiting.id, current_generation=99), 5)
        assert same.generation is UNSET
        assert plain.service.preview.waiting == 0
        # ifGenerationMatch is not read: a stale one changes nothing.
        done = await client.send("now", task_id=waiting.id, configuration=matching(7))
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED


async def test_without_the_preview_the_json_is_1_0_s(plain: Running) -> None:
    """The bytes of a stream and of GetTask name no field of the preview, whatever the
    request carried."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {
            "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "tick 2"}]},
            "configuration": {"ifGenerationMatch": "3"},
        },
    }
    async with httpx.AsyncClient(base_url=plain.url, headers={"A2A-Version": "1.0"}) as http:
        streamed = await http.post("/", json=body)
        assert "generation" not in streamed.text.lower()
        task_id = json.loads(streamed.text.split("data: ", 1)[1].split("\n", 1)[0])["result"][
            "task"
        ]["id"]
        got = await http.get(f"/tasks/{task_id}", params={"currentGeneration": "1"})
        assert got.status_code == 200
        assert "generation" not in got.text.lower()


# --- the setting ---------------------------------------------------------------------------


def test_the_setting_takes_known_previews_only(tmp_path: Any) -> None:
    good = tmp_path / "good.toml"
    good.write_text('a2a_preview = ["1.1"]\n')
    assert load(str(good)).a2a_preview == ["1.1"]
    bad = tmp_path / "bad.toml"
    bad.write_text('a2a_preview = ["1.2"]\n')
    with pytest.raises(ConfigError, match=r"a2a_preview.*1\.1.*1\.2"):
        load(str(bad))
    assert Settings().a2a_preview == []
