"""The sockets a node's processes hand each other their metric families on
(accord.server._node_metrics), in one process over real Unix sockets: a sibling that answers
is merged, one that is dead (its socket file left), hangs, says too much or says nonsense is
left out and logged at most once a minute; a socket file left by a dead process is replaced,
and removed when serving stops. And two applications joined as one node, in one loop: each
one's ``/metrics`` answers for both; one alone answers as always."""

from __future__ import annotations

import asyncio
import logging
import socket
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families
from tests.waiting import until

from accord.agents import RequestContext, TaskHandle
from accord.app import Settings, build_app
from accord.server import NodeMetrics
from accord.telemetry import encode_families, families_of
from accord.telemetry._node import PROCESS_LABEL


@pytest.fixture
def directory() -> Iterator[Path]:
    # short: a Unix socket's path has ~100 bytes at most
    with tempfile.TemporaryDirectory(prefix="accord-nm-") as name:
        yield Path(name)


def payload(value: float) -> bytes:
    return encode_families(families_of([GaugeMetricFamily("accord_x", "x", value=value)]))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def serving(directory: Path) -> AsyncIterator[list[asyncio.Task[None]]]:
    tasks: list[asyncio.Task[None]] = []
    yield tasks
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def start(node: NodeMetrics, answer: bytes, tasks: list[asyncio.Task[None]]) -> None:
    """``node`` serving ``answer``, once it accepts connections."""
    tasks.append(asyncio.create_task(node.serve(lambda: answer)))

    async def accepts() -> bool:
        try:
            _, writer = await asyncio.open_unix_connection(str(node.path(node.index)))
        except OSError:  # not yet bound (or still a dead process's socket file)
            return False
        writer.close()
        return True

    await until(accepts, f"process {node.index} to listen", every_s=0.001)


def dead_socket(path: Path) -> None:
    """A socket file nobody listens on, as a process killed by SIGKILL leaves it."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()


async def test_the_siblings_that_answer_are_returned_the_dead_one_logged_once_a_minute(
    directory: Path, serving: list[asyncio.Task[None]], caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    asking = NodeMetrics(directory, 1, 3, clock=clock)
    await start(NodeMetrics(directory, 2, 3), payload(5), serving)
    dead_socket(asking.path(3))
    caplog.set_level(logging.WARNING, "accord.telemetry")

    answers = await asking.ask()
    assert [(k, [f.name for f in found]) for k, found in answers] == [(2, ["accord_x"])]
    assert answers[0][1][0].samples[0].value == 5
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and said[0].startswith("metrics: process 3 did not answer (")

    clock.now += 59
    assert [k for k, _ in await asking.ask()] == [2]
    assert len(caplog.records) == 1  # not again within the minute
    clock.now += 1
    assert [k for k, _ in await asking.ask()] == [2]
    assert len(caplog.records) == 2


async def test_a_missing_hanging_oversized_or_garbled_sibling_is_left_out(
    directory: Path, serving: list[asyncio.Task[None]], caplog: pytest.LogCaptureFixture
) -> None:
    # 2: no socket at all (not started yet); 3: accepts and never answers; 4: too much;
    # 5: not the wire form; 6: answers.
    asking = NodeMetrics(directory, 1, 6, timeout_s=0.3, max_bytes=1000)
    release = asyncio.Event()

    async def hang(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await release.wait()
        writer.close()

    hanging = await asyncio.start_unix_server(hang, str(asking.path(3)))
    await start(NodeMetrics(directory, 4, 6), b"[" + b" " * 5000 + b"]", serving)
    await start(NodeMetrics(directory, 5, 6), b'{"not": "families"}', serving)
    await start(NodeMetrics(directory, 6, 6), payload(1), serving)
    caplog.set_level(logging.WARNING, "accord.telemetry")
    try:
        answers = await asking.ask()
    finally:
        release.set()
        hanging.close()
        await hanging.wait_closed()
    assert [k for k, _ in answers] == [6]
    said = " | ".join(r.getMessage() for r in caplog.records)
    for k in (2, 3, 4, 5):
        assert f"process {k} did not answer" in said
    assert "more than 1000 bytes" in said


async def test_serving_replaces_a_dead_processs_socket_and_removes_its_own(
    directory: Path, serving: list[asyncio.Task[None]]
) -> None:
    node = NodeMetrics(directory, 2, 2)
    dead_socket(node.path(2))
    await start(node, payload(7), serving)
    answers = await NodeMetrics(directory, 1, 2).ask()
    assert [(k, found[0].samples[0].value) for k, found in answers] == [(2, 7)]
    serving[0].cancel()
    await asyncio.gather(serving[0], return_exceptions=True)
    assert not node.path(2).exists()
    assert await NodeMetrics(directory, 1, 2).ask() == []


def test_one_process_has_no_siblings() -> None:
    assert NodeMetrics("/nowhere", 1, 1).siblings == []
    assert NodeMetrics("/nowhere", 2, 3).siblings == [1, 3]


# --- two applications of one node, in one loop -------------------------------------------


async def done(_ctx: RequestContext, task: TaskHandle) -> None:
    await task.complete("done")


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def total(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str) -> float:
    return sum(v for (n, _), v in found.items() if n == name)


async def test_each_application_of_a_node_answers_for_both(directory: Path) -> None:
    apps = [build_app(Settings(store="memory://", grpc_port=None), done) for _ in range(2)]
    for index, app in enumerate(apps, 1):
        assert app.metrics is not None
        app.metrics.join(NodeMetrics(directory, index, 2))
    clients = [
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://localhost",
            headers={"A2A-Version": "1.0"},
        )
        for app in apps
    ]
    for app in apps:
        await app.service.engine.start()
    try:
        for sent, http in zip((3, 2), clients, strict=True):  # 3 tasks in the first, 2 in the other
            for _ in range(sent):
                body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
                text = {
                    "messageId": str(uuid.uuid4()),
                    "role": "ROLE_USER",
                    "parts": [{"text": "x"}],
                }
                body["params"] = {"message": text}
                assert "result" in (await http.post("/", json=body)).json()

        async def scrape(
            http: httpx.AsyncClient,
        ) -> dict[tuple[str, frozenset[tuple[str, str]]], float] | None:
            answer = await http.get("/metrics")
            assert answer.status_code == 200, answer.text
            found = samples(answer.text)
            return found if found[("accord_processes_scraped", frozenset())] == 2 else None

        for own_tasks, http in zip((3, 2), clients, strict=True):
            # (a sibling's socket is made once its engine has started: asked until it answers)
            found = await until(lambda http=http: scrape(http), "both applications")
            assert total(found, "accord_requests_total") == 5
            assert found[("accord_processes", frozenset())] == 2
            assert total(found, "accord_tasks") == own_tasks  # the store's, read once
            assert {labels for n, labels in found if n == "process_start_time_seconds"} == {
                frozenset({("process", "1")}),
                frozenset({("process", "2")}),
            }

        await apps[1].service.engine.stop()  # its socket goes with it
        answer = samples((await clients[0].get("/metrics")).text)
        assert answer[("accord_processes_scraped", frozenset())] == 1
        assert total(answer, "accord_requests_total") == 3
    finally:
        for app in apps:
            if app.service.engine.started:
                await app.service.engine.stop()
        for http in clients:
            await http.aclose()


async def test_one_application_alone_has_no_node_families() -> None:
    app = build_app(Settings(store="memory://", grpc_port=None), done)
    await app.service.engine.start()
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            found = samples((await http.get("/metrics")).text)
    finally:
        await app.service.engine.stop()
    names = {name for name, _ in found}
    assert "accord_build_info" in names
    assert not names & {"accord_processes", "accord_processes_scraped"}
    assert all(PROCESS_LABEL not in dict(labels) for _, labels in found)
