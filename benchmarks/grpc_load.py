"""A small gRPC load generator (wrk has no gRPC): ``--connections`` channels, one call in
flight on each, for ``--seconds``; every response is checked like the wrk scripts check
theirs. Prints one ``RESULT {json}`` line in the wrk scripts' format.

It is Python (grpc.aio on uvloop), so it needs CPU of its own on the machine it shares with
the server; its numbers are comparable between servers measured with it, not with wrk's.

    python benchmarks/grpc_load.py --target 127.0.0.1:50051 --scenario send -c 8 -d 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
import uuid
from typing import Any

import grpc
from a2a.types import a2a_pb2, a2a_pb2_grpc

METADATA = (("a2a-version", "1.0"),)
COMPLETED = a2a_pb2.TaskState.TASK_STATE_COMPLETED


def _message(tag: str) -> Any:
    return a2a_pb2.Message(
        message_id=f"m-{tag}",
        role=a2a_pb2.Role.ROLE_USER,
        parts=[a2a_pb2.Part(text=f"hello {tag}")],
    )


def _echoed(task: Any) -> bool:
    return any(part.text.startswith("echo: hello") for art in task.artifacts for part in art.parts)


async def _call(stub: Any, scenario: str, tag: str, index: int, stored: int, total: int) -> bool:
    if scenario == "send":
        reply = await stub.SendMessage(
            a2a_pb2.SendMessageRequest(message=_message(tag)), metadata=METADATA
        )
        return bool(reply.HasField("task") and reply.task.status.state == COMPLETED) and _echoed(
            reply.task
        )
    if scenario == "stream":
        last, echoed, count = None, False, 0
        async for item in stub.SendStreamingMessage(
            a2a_pb2.SendMessageRequest(message=_message(tag)), metadata=METADATA
        ):
            count += 1
            last = item
            if item.HasField("artifact_update"):
                echoed = any(
                    p.text.startswith("echo: hello") for p in item.artifact_update.artifact.parts
                )
        return (
            echoed
            and count >= 4
            and last is not None
            and last.HasField("status_update")
            and last.status_update.status.state == COMPLETED
        )
    if scenario == "get":
        task_id = str(uuid.UUID(int=(index * 7919) % stored + 1))
        task = await stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=METADATA)
        return bool(task.id == task_id and task.status.state == COMPLETED and _echoed(task))
    if scenario == "list":
        page = await stub.ListTasks(a2a_pb2.ListTasksRequest(page_size=50), metadata=METADATA)
        return bool(
            len(page.tasks) == 50
            and page.total_size == total
            and all(t.status.state == COMPLETED for t in page.tasks)
        )
    raise ValueError(scenario)


async def run(
    target: str, scenario: str, connections: int, seconds: float, stored: int, total: int
) -> dict[str, Any]:
    channels = [grpc.aio.insecure_channel(target) for _ in range(connections)]
    stubs = [a2a_pb2_grpc.A2AServiceStub(channel) for channel in channels]  # type: ignore[no-untyped-call]
    latencies: list[float] = []
    counts = {"bad": 0, "errors": 0}
    run_id = os.urandom(4).hex()
    deadline = time.perf_counter() + seconds

    async def worker(number: int, stub: Any) -> None:
        index = 0
        while time.perf_counter() < deadline:
            index += 1
            start = time.perf_counter()
            try:
                ok = await _call(stub, scenario, f"{run_id}-{number}-{index}", index, stored, total)
            except grpc.aio.AioRpcError:
                counts["errors"] += 1
                continue
            latencies.append(time.perf_counter() - start)
            if not ok:
                counts["bad"] += 1

    for channel in channels:
        await channel.channel_ready()
    started = time.perf_counter()
    await asyncio.gather(*(worker(n, stub) for n, stub in enumerate(stubs)))
    duration = time.perf_counter() - started
    for channel in channels:
        await channel.close()
    latencies.sort()

    def pct(p: float) -> int:
        return int(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1e6)

    return {
        "requests": len(latencies),
        "duration_us": int(duration * 1e6),
        "bad": counts["bad"],
        "socket_errors": counts["errors"],
        "p50_us": pct(0.5) if latencies else 0,
        "p90_us": pct(0.9) if latencies else 0,
        "p99_us": pct(0.99) if latencies else 0,
        "mean_us": statistics.fmean(latencies) * 1e6 if latencies else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--scenario", required=True, choices=["send", "stream", "get", "list"])
    parser.add_argument("-c", "--connections", type=int, default=8)
    parser.add_argument("-d", "--seconds", type=float, default=5.0)
    parser.add_argument("--stored", type=int, default=1000)
    parser.add_argument("--total", type=int, default=1000)
    args = parser.parse_args()
    import uvloop

    result = uvloop.run(
        run(args.target, args.scenario, args.connections, args.seconds, args.stored, args.total)
    )
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
