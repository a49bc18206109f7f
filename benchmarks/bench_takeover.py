"""How long until a dead node's task is taken over by another node (run by hand).

    .venv/bin/python benchmarks/bench_takeover.py [--runs 10]
        [--pg postgresql://postgres@127.0.0.1:5432/postgres] [--agent scaleout_agents:agent]

On a fresh database (dropped after), two ``accord serve`` nodes with the default settings. Each
run sends a task (``slow``: it works until canceled) to node A, waits until node B sees it
WORKING, then ``kill -9``s node A and reads the task on node B every 10 ms until it is no longer
WORKING: the takeover time is from the kill to that read. With ``scaleout_agents:agent`` node B
fails the task (the agent cannot resume); with ``scaleout_agents:resumable`` it resumes it (and
the task completes there). Node A is then started again (a new node), and the next run starts
once node B has had a second to see its lock session, as it would a node that has run for a
while.

Last, the watch's own query (``accord.store._pg_nodes.READ_LOCK_SESSIONS``, which each node runs
every ``liveness_interval_s``) is timed from one connection, with the database's sessions of
this benchmark open.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "scaleout"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_scaleout import fresh_database
from cluster import Node, start_node, stop_node, wait_ready

try:
    from accord.store._pg_nodes import READ_LOCK_SESSIONS
except ImportError:  # (a version before the node watch: its takeover, for comparison)
    READ_LOCK_SESSIONS = ""

HEADERS = {"A2A-Version": "1.0"}


async def rpc(
    client: httpx.AsyncClient, node: Node, method: str, params: dict[str, object]
) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer = (await client.post(f"{node.url}/", json=body, headers=HEADERS)).json()
    if "result" not in answer:
        raise RuntimeError(f"{method} on {node.name}: {answer}")
    result: dict = answer["result"]
    return result


async def state(client: httpx.AsyncClient, node: Node, task_id: str) -> str:
    return str((await rpc(client, node, "GetTask", {"id": task_id}))["status"]["state"])


async def one_takeover(
    client: httpx.AsyncClient, doomed: Node, survivor: Node
) -> tuple[float, str]:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "slow"}]}
    created = await rpc(
        client,
        doomed,
        "SendMessage",
        {"message": message, "configuration": {"returnImmediately": True}},
    )
    task_id = created["task"]["id"]
    deadline = time.monotonic() + 30
    while await state(client, survivor, task_id) != "TASK_STATE_WORKING":
        if time.monotonic() > deadline:
            raise RuntimeError("the task did not start")
        await asyncio.sleep(0.02)
    killed = time.monotonic()
    doomed.kill()
    while (now := await state(client, survivor, task_id)) == "TASK_STATE_WORKING":
        if time.monotonic() - killed > 120:
            raise RuntimeError("the task was not taken over within 120 s")
        await asyncio.sleep(0.01)
    return time.monotonic() - killed, now


async def watch_query_cost(dsn: str, count: int = 2000) -> float:
    """Mean round trip of the watch's query, in microseconds."""
    conn = await asyncpg.connect(dsn)
    try:
        for _ in range(100):
            await conn.fetchrow(READ_LOCK_SESSIONS)
        started = time.perf_counter()
        for _ in range(count):
            await conn.fetchrow(READ_LOCK_SESSIONS)
        return (time.perf_counter() - started) / count * 1e6
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--agent", default="scaleout_agents:agent")
    args = parser.parse_args()

    times: list[float] = []
    with fresh_database(args.pg) as dsn, tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        survivor = start_node("survivor", dsn, workdir, args.agent, "")
        wait_ready(survivor, 60)
        try:
            for run in range(args.runs):
                doomed = start_node(f"doomed-{run}", dsn, workdir, args.agent, "")
                try:
                    wait_ready(doomed, 60)
                    time.sleep(1.0)  # node B has seen the new node's lock session

                    async def measure(doomed: Node = doomed) -> tuple[float, str]:
                        async with httpx.AsyncClient(timeout=30) as client:
                            return await one_takeover(client, doomed, survivor)

                    took, ended = asyncio.run(measure())
                finally:
                    stop_node(doomed)
                times.append(took)
                print(f"run {run + 1}: taken over in {took:.3f} s ({ended})", flush=True)
            cost = asyncio.run(watch_query_cost(dsn)) if READ_LOCK_SESSIONS else None
        finally:
            stop_node(survivor)
    print(
        f"\n{len(times)} runs, agent {args.agent}: takeover p50 {statistics.median(times):.2f} s,"
        f" min {min(times):.2f} s, max {max(times):.2f} s"
    )
    if cost is not None:
        print(f"the watch's query: {cost:.0f} us per round trip (one connection, this machine)")


if __name__ == "__main__":
    main()
