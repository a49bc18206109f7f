"""The sockets a node's processes hand each other their metric families on
(accord.server._node_metrics), in one process over real Unix sockets: a sibling that answers
is merged, one that is dead (its socket file left), hangs, says too much or says nonsense is
left out and logged at most once a minute; a socket file left by a dead process is replaced,
and removed when serving stops."""

from __future__ import annotations

import asyncio
import logging
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from prometheus_client.core import GaugeMetricFamily
from tests.waiting import until

from accord.server import NodeMetrics
from accord.telemetry import encode_families, families_of


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
