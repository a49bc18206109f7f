"""What a scrape of ``/metrics`` costs when it answers for a node of N processes, in one run.

    python3 benchmarks/node_scrape.py        # --processes 1 2 4 --scrapes 200 --rounds 3
        [--pg postgresql://postgres@127.0.0.1:5432/postgres]

Servers: ``accord serve --processes N`` (echo agent) for each N, on one PostgreSQL database
(each on a database of its own), started side by side, each sent the same SendMessage requests
first (so every family has samples). Then, in each round, each server in turn is scraped
``--scrapes`` times, one scrape at a time, each on a new connection (raw HTTP/1.1, so no
client library's cost; the connection's is in every figure, alike for every N). With N = 1
the scrape is the unchanged single-process one; with N > 1 the answering child also asks
its N - 1 siblings over Unix sockets and merges. Prints per N: scrape p50 and p99 (ms), the
ratio of each to N = 1 in the same run, and the response size.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # (bench_scaleout reads tests.scaleout)
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402  (benchmarks/run.py: servers, the environment)
from bench_scaleout import fresh_database  # noqa: E402

REQUESTS = 200


def _send(url: str, count: int) -> None:
    with httpx.Client(timeout=30) as client:
        for _ in range(count):
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {
                    "message": {
                        "role": "ROLE_USER",
                        "messageId": str(uuid.uuid4()),
                        "parts": [{"text": "hi"}],
                    }
                },
            }
            answer = client.post(url + "/", json=body, headers={"A2A-Version": "1.0"}).json()
            assert "result" in answer, answer


def _scrapes(port: int, count: int) -> tuple[list[float], int]:
    """``count`` scrapes, each on a new connection (raw HTTP/1.1: no client's own cost)."""
    request = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    times: list[float] = []
    size = 0
    for _ in range(count):
        started = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(request)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        times.append(time.perf_counter() - started)
        response = b"".join(chunks)
        assert response.startswith(b"HTTP/1.1 200"), response[:200]
        size = len(response.partition(b"\r\n\r\n")[2])
    return times, size


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--pg",
        default=os.environ.get("ACCORD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres"),
    )
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="accord-node-scrape-"))
    servers: dict[int, bench.Server] = {}
    with contextlib.ExitStack() as stack:
        for n in args.processes:
            dsn = stack.enter_context(fresh_database(args.pg))  # (a fresh database each)
            port = bench.free_port()
            argv = [sys.executable, "-m", "accord", "serve", "--host", "127.0.0.1"]
            argv += ["--port", str(port), "--store", dsn, "--agent", "echo"]
            argv += ["--log-level", "warning", "--processes", str(n)]
            server = bench.Server(
                f"processes-{n}", argv, port, "/.well-known/agent-card.json", workdir / f"{n}.log"
            )
            server.start()
            stack.callback(server.stop)
            servers[n] = server
            _send(f"http://127.0.0.1:{port}", REQUESTS)
        times: dict[int, list[float]] = {n: [] for n in servers}
        sizes: dict[int, int] = {}
        for _ in range(args.rounds):
            for n, server in servers.items():
                found, sizes[n] = _scrapes(server.port, args.scrapes)
                times[n].extend(found)
        base = times[min(servers)]
        print(f"{len(base) // args.rounds} scrapes x {args.rounds} rounds per server")
        head = ("processes", "p50 ms", "p99 ms", "p50 x", "p99 x", "bytes")
        print("{:>9} {:>8} {:>8} {:>6} {:>6} {:>7}".format(*head))
        for n, found in times.items():
            p50, p99 = statistics.median(found), _p(found, 0.99)
            print(
                f"{n:>9} {p50 * 1000:8.2f} {p99 * 1000:8.2f} "
                f"{p50 / statistics.median(base):6.2f} {p99 / _p(base, 0.99):6.2f} {sizes[n]:>7}"
            )


if __name__ == "__main__":
    main()
