"""gRPC: ``accord serve --grpc-port`` against the official a2a-sdk's gRPC server, one run.

    .venv/bin/python benchmarks/grpc_server.py [--seconds 5] [--repeat 3] [--concurrency 16]

Servers (127.0.0.1): ``accord serve`` with the echo agent and its default store (SQLite,
default durability, in a temporary directory), and benchmarks/sdk_echo.py (a2a-sdk echo agent,
in-memory store). The client is one grpc.aio process driving ``--concurrency`` calls at once
with the official stubs and checking every answer; it is the same for both servers, so the
numbers compare servers on this machine, they are not absolute capacities. Scenarios: GetTask of
one completed task, and blocking SendMessage (a new echo task per call). The table shows
calls/s and mean latency, medians over the repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc

HERE = Path(__file__).resolve().parent
METADATA = (("a2a-version", "1.0"),)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_card(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/.well-known/agent-card.json", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


@contextmanager
def server(name: str) -> Iterator[str]:
    """Start one server; yields its gRPC address."""
    port, grpc_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as tmp:
        if name == "accord":
            argv = [
                str(Path(sys.executable).with_name("accord")), "serve",
                "--port", str(port), "--grpc-port", str(grpc_port),
                "--store", f"sqlite:///{tmp}/accord.db", "--agent", "echo",
                "--log-level", "warning",
            ]  # fmt: skip
        else:
            argv = [
                sys.executable, str(HERE / "sdk_echo.py"),
                "--port", str(port), "--grpc-port", str(grpc_port),
            ]  # fmt: skip
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_card(f"http://127.0.0.1:{port}", process)
            yield f"127.0.0.1:{grpc_port}"
        finally:
            process.terminate()
            process.wait(10)


def send_request(text: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(
        message=pb.Message(
            message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text=text)]
        )
    )


async def drive(
    call: Callable[[], Awaitable[None]], seconds: float, concurrency: int
) -> tuple[float, float]:
    """Calls/s and mean latency (ms) of ``call`` run by ``concurrency`` workers."""
    count = 0
    latency = 0.0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal count, latency
        while time.perf_counter() < stop:
            started = time.perf_counter()
            await call()
            latency += time.perf_counter() - started
            count += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return count / (time.perf_counter() - began), latency / max(count, 1) * 1000


async def measure(address: str, seconds: float, concurrency: int) -> dict[str, tuple[float, float]]:
    async with grpc.aio.insecure_channel(address) as channel:
        stub: Any = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
        first = await stub.SendMessage(send_request("seed"), metadata=METADATA)
        task_id = first.task.id

        async def get_task() -> None:
            task = await stub.GetTask(pb.GetTaskRequest(id=task_id), metadata=METADATA)
            assert task.id == task_id and task.status.state == pb.TASK_STATE_COMPLETED

        async def send_message() -> None:
            answer = await stub.SendMessage(send_request("bench"), metadata=METADATA)
            assert answer.task.artifacts[0].parts[0].text == "echo: bench"

        await drive(get_task, 0.5, concurrency)  # warm up
        return {
            "GetTask": await drive(get_task, seconds, concurrency),
            "SendMessage": await drive(send_message, seconds, concurrency),
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.repeat):
        for name in ("accord", "a2a-sdk"):
            with server(name) as address:
                measured = asyncio.run(measure(address, args.seconds, args.concurrency))
            for scenario, value in measured.items():
                results.setdefault((scenario, name), []).append(value)
    print(f"cpus={os.cpu_count()} seconds={args.seconds} repeat={args.repeat} "
          f"concurrency={args.concurrency}")  # fmt: skip
    print(f"{'scenario':12s} {'server':8s} {'calls/s':>9s} {'mean ms':>8s}")
    for (scenario, name), values in sorted(results.items()):
        rate = statistics.median(v[0] for v in values)
        mean = statistics.median(v[1] for v in values)
        print(f"{scenario:12s} {name:8s} {rate:9.0f} {mean:8.2f}")


if __name__ == "__main__":
    main()
