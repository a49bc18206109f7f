"""The benchmark's gRPC load generator (benchmarks/grpc_load.py) checks each answer the way
the wrk scripts do: accord's gRPC answers on a store filled like the benchmark's pass, and
answers that are wrong the way a broken server could be wrong fail."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc

from accord.app._build import build_app
from accord.app._settings import Settings
from accord.grpc._server import start_server

sys.path.append(str(Path(__file__).resolve().parents[2] / "benchmarks"))  # not a package

from grpc_load import _call
from populate_accord import populate

STORED = 60  # ListTasks pages 50 and must report them all


@pytest.fixture
async def stub(tmp_path: Path) -> AsyncIterator[Any]:
    db = tmp_path / "bench.db"
    await populate(str(db), first=1, count=STORED, concurrency=4)
    app = build_app(Settings(store=f"sqlite:///{db}"))
    await app.service.engine.start()
    server, port = await start_server(
        app.service, "127.0.0.1:0", app.jsonrpc.auth, require_auth=False
    )
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield a2a_pb2_grpc.A2AServiceStub(channel)
    finally:
        await channel.close()
        await server.stop(None)
        await app.service.engine.stop()


@pytest.mark.parametrize("scenario", ["send", "stream", "get", "list"])
async def test_accords_answers_pass(stub: Any, scenario: str) -> None:
    for index in range(3):
        assert await _call(stub, scenario, f"t{index}", index, STORED, STORED)


class Spoiled:
    """Answers as accord's stub gives them, changed by ``spoil`` on their way back."""

    def __init__(self, real: Any, spoil: Any) -> None:
        self.real, self.spoil = real, spoil

    async def SendMessage(self, request: Any, **kw: Any) -> Any:
        return self.spoil(await self.real.SendMessage(request, **kw))

    async def GetTask(self, request: Any, **kw: Any) -> Any:
        return self.spoil(await self.real.GetTask(request, **kw))

    async def ListTasks(self, request: Any, **kw: Any) -> Any:
        return self.spoil(await self.real.ListTasks(request, **kw))

    def SendStreamingMessage(self, request: Any, **kw: Any) -> AsyncIterator[Any]:
        async def items() -> AsyncIterator[Any]:
            got = [item async for item in self.real.SendStreamingMessage(request, **kw)]
            for item in self.spoil(got):
                yield item

        return items()


def _working(answer: Any) -> Any:
    task = answer.task if isinstance(answer, pb.SendMessageResponse) else answer
    task.status.state = pb.TaskState.TASK_STATE_WORKING
    return answer


def _no_artifact(answer: Any) -> Any:
    task = answer.task if isinstance(answer, pb.SendMessageResponse) else answer
    del task.artifacts[:]
    return answer


def _another_task(answer: Any) -> Any:
    answer.id = "00000000-0000-0000-0000-00000000ffff"
    return answer


def _short_page(page: Any) -> Any:
    del page.tasks[1:]
    return page


def _another_total(page: Any) -> Any:
    page.total_size += 1
    return page


def _last_event_dropped(items: list[Any]) -> Iterator[Any]:
    return iter(items[:-1])


def _first_event_dropped(items: list[Any]) -> Iterator[Any]:
    return iter(items[1:])


@pytest.mark.parametrize(
    ("scenario", "spoil"),
    [
        ("send", _working),
        ("send", _no_artifact),
        ("get", _working),
        ("get", _no_artifact),
        ("get", _another_task),
        ("list", _short_page),
        ("list", _another_total),
        ("stream", _last_event_dropped),
        ("stream", _first_event_dropped),
    ],
)
async def test_a_wrong_answer_fails(stub: Any, scenario: str, spoil: Any) -> None:
    assert await _call(Spoiled(stub, lambda answer: answer), scenario, "ok", 1, STORED, STORED)
    assert not await _call(Spoiled(stub, spoil), scenario, "bad", 1, STORED, STORED)
