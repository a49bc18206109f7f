"""SendMessage throughput of accord nodes on one PostgreSQL database (run by hand).

    .venv/bin/python benchmarks/bench_scaleout.py [--nodes 1 2] [--concurrency 32]
        [--seconds 10] [--pg postgresql://postgres@127.0.0.1:5432/postgres] [--sqlite]
        [--holds-ab ROUNDS]

For each node count, a fresh database is created (and dropped after), that many ``accord
serve --agent echo`` processes are started on it, and ``--concurrency`` clients send blocking
JSON-RPC SendMessage requests spread round-robin over the nodes, each on its own keep-alive
connection, for ``--seconds`` after a warm-up. Every request creates a task that the echo
agent works on, answers with one artifact and completes: 4 appends to the store.

The load generator is one process writing raw HTTP/1.1 on asyncio (no HTTP library), so that
it takes as little of the machine's CPU as possible; its CPU share is printed with the result.
``--sqlite`` adds a single node on a SQLite file for comparison.

``--holds-ab ROUNDS`` instead measures what the per-task advisory locks cost (docs/scale-out.md):
one node on one fresh database, restarted for every run with ``task_holds`` on or off,
alternating (on/off, then off/on, ...) for ROUNDS rounds, and prints the medians and the
off/on ratios of throughput and of CPU per request (the node's, the backends', both).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "scaleout"))

from cluster import Node, cluster


def _with_database(dsn: str, database: str) -> str:
    base, _, query = dsn.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{database}" + (f"?{query}" if query else "")


@contextlib.contextmanager
def fresh_database(admin: str) -> Iterator[str]:
    name = f"accord_bench_{uuid.uuid4().hex[:10]}"

    async def run(statement: str) -> None:
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(run(f'CREATE DATABASE "{name}"'))
    try:
        yield _with_database(admin, name)
    finally:
        asyncio.run(run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _backends(database: str) -> list[int]:
    """PostgreSQL server processes serving ``database`` (their title names it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if title.startswith("postgres:") and f" {database} " in title:
                found.append(int(entry.name))
    return found


def _cpu(nodes: list[Node], database: str) -> tuple[float, float]:
    """CPU seconds so far: of the nodes, and of the database's server backends."""
    return (
        sum(_cpu_seconds(node.process.pid) for node in nodes),
        sum(_cpu_seconds(pid) for pid in _backends(database)),
    )


def _request(host: str, port: int, index: int) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": index,
            "method": "SendMessage",
            "params": {
                "message": {
                    "messageId": f"m-{index}-{uuid.uuid4().hex[:8]}",
                    "role": "ROLE_USER",
                    "parts": [{"text": f"hello {index}"}],
                }
            },
        }
    ).encode()
    head = (
        f"POST / HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"A2A-Version: 1.0\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head + body


async def _client(url: str, stop_at: float, counts: list[int], start_at: float) -> None:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    index = 0
    try:
        while time.monotonic() < stop_at:
            index += 1
            writer.write(_request(host, int(port), index))
            status = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await reader.readexactly(length)
            if b" 200 " not in status or b'"TASK_STATE_COMPLETED"' not in body:
                raise RuntimeError(f"unexpected answer: {status!r} {body[:300]!r}")
            if time.monotonic() >= start_at:
                counts[0] += 1
    finally:
        writer.close()


async def _load(nodes: list[Node], concurrency: int, seconds: float, warmup: float) -> float:
    now = time.monotonic()
    start_at, stop_at = now + warmup, now + warmup + seconds
    counts = [0]
    await asyncio.gather(
        *(_client(nodes[i % len(nodes)].url, stop_at, counts, start_at) for i in range(concurrency))
    )
    return counts[0] / seconds


@dataclass(frozen=True)
class Result:
    rate: float  # SendMessage/s
    node_ms: float  # CPU of the nodes per request, ms
    pg_ms: float  # CPU of the database's backends per request, ms

    @property
    def total_ms(self) -> float:
        return self.node_ms + self.pg_ms


def measure(
    store: str,
    size: int,
    args: argparse.Namespace,
    workdir: Path,
    config: str = "",
    label: str = "",
) -> Result:
    database = store.rsplit("/", 1)[1].split("?")[0] if store.startswith("postgres") else ""
    with cluster(store, workdir, size=size, agent="echo", config=config) as nodes:
        # One request per node first: connections, caches and the schema are warm.
        for node in nodes:
            httpx.get(f"{node.url}/.well-known/agent-card.json").raise_for_status()
        cpu = time.process_time()
        wall = time.monotonic()
        nodes_cpu, pg_cpu = _cpu(nodes, database)
        rate = asyncio.run(_load(nodes, args.concurrency, args.seconds, args.warmup))
        elapsed = time.monotonic() - wall
        nodes_after, pg_after = _cpu(nodes, database)
        share = (time.process_time() - cpu) / elapsed
    kind = label or store.split(":", 1)[0]
    load = os.getloadavg()
    requests = rate * args.seconds
    result = Result(
        rate,
        1000 * (nodes_after - nodes_cpu) / requests,
        1000 * (pg_after - pg_cpu) / requests,
    )
    print(
        f"{kind:10} {size} node(s), {args.concurrency} clients: {rate:8.0f} SendMessage/s;"
        f" CPU: nodes {(nodes_after - nodes_cpu) / elapsed:.0%},"
        f" PostgreSQL backends {(pg_after - pg_cpu) / elapsed:.0%},"
        f" load generator {share:.0%}; per request: node {result.node_ms:.3f} ms,"
        f" backends {result.pg_ms:.3f} ms; load average {load[0]:.1f}",
        flush=True,
    )
    return result


def holds_ab(dsn: str, rounds: int, args: argparse.Namespace, workdir: Path) -> None:
    """One node, ``task_holds`` on and off alternately; medians and off/on ratios."""
    runs: dict[bool, list[Result]] = {True: [], False: []}
    for index in range(rounds):
        order = (True, False) if index % 2 == 0 else (False, True)
        for holds in order:
            config = f"task_holds = {'true' if holds else 'false'}\n"
            label = f"holds {'on' if holds else 'off'}"
            runs[holds].append(measure(dsn, 1, args, workdir, config, label))

    def median(holds: bool, field: str) -> float:
        return float(statistics.median(getattr(r, field) for r in runs[holds]))

    print(f"medians of {rounds} runs each, and off/on:")
    for field, name in (
        ("rate", "SendMessage/s"),
        ("node_ms", "node CPU ms/request"),
        ("pg_ms", "backend CPU ms/request"),
        ("total_ms", "total CPU ms/request"),
    ):
        on, off = median(True, field), median(False, field)
        print(f"  {name:24} on {on:9.3f}  off {off:9.3f}  off/on {off / on:.3f}")
    # Pairs measured next to each other: the ratio within a round, less exposed to drift.
    pairs = [off.total_ms / on.total_ms for on, off in zip(runs[True], runs[False], strict=True)]
    rates = [off.rate / on.rate for on, off in zip(runs[True], runs[False], strict=True)]
    print(
        "  per round, off/on: SendMessage/s "
        + ", ".join(f"{r:.3f}" for r in rates)
        + "; total CPU/request "
        + ", ".join(f"{p:.3f}" for p in pairs)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument(
        "--pg",
        default=os.environ.get("ACCORD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres"),
        help="an admin DSN: the benchmark creates and drops its own database there",
    )
    parser.add_argument("--sqlite", action="store_true", help="also one node on SQLite")
    parser.add_argument(
        "--holds-ab",
        type=int,
        metavar="ROUNDS",
        help="only compare one node with task_holds on and off, ROUNDS rounds",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        workdir = Path(tmp)
        if args.holds_ab:
            with fresh_database(args.pg) as dsn:
                holds_ab(dsn, args.holds_ab, args, workdir)
            return
        if args.sqlite:
            measure(f"sqlite:///{workdir / 'bench.db'}", 1, args, workdir)
        for size in args.nodes:
            with fresh_database(args.pg) as dsn:
                measure(dsn, size, args, workdir)


if __name__ == "__main__":
    main()
