"""The harness at scale (issue 39 point 3): many concurrent streaming conversations against a
model that streams at a fixed rate, and the memory of many parked conversations.

    python3 benchmarks/harness_scale.py --no-venv     # --streams 10,100,300,1000 --turns 3
        [--tokens 20 --rate 30] [--parked 1000,10000,30000] [--store pg] [--profile FILE]
        [--clients accord,package] [--store pg --processes 1,2]

The model is benchmarks/fake_rate_model.py in its own process: every call streams
``--tokens`` text chunks at ``--rate`` per second, the first call of a turn then calls the
harness's ``create_plan`` tool, the second answers; so a turn's model time is two calls'
streaming, ``2 * (tokens - 1) / rate``. Each chunk's text is the time it was written
(``time.monotonic_ns()``, one clock for the machine's processes).

1. **Streams**: for each count N, N conversations on ``accord serve --agent harness``
   (SQLite; or ``--store pg``: two nodes on one fresh PostgreSQL database, conversation i on
   node i mod 2), started evenly over one second, each ``--turns`` turns back to back, every
   turn a SendStreamingMessage over JSON-RPC. The client is a bare asyncio protocol in this
   process (no SSE parsing: it finds the chunks' stamps in the bytes as they arrive): token
   to client is the time from the fake model writing a chunk to the client reading it; turn
   time is from sending the message to the end of its stream. Every turn is checked: all
   ``2 * tokens`` chunks seen, the stream ends in INPUT_REQUIRED; tokens per streamed chunk
   (SSE artifact event) alongside. Server CPU (all nodes,
   /proc/PID/stat) over the step, per token and per turn (the same CPU, divided two ways);
   the client's, the fake model's and (``--store pg``) the database backends' CPU alongside.
   ``--processes 1,2`` (with ``--store pg``): instead of two nodes, one ``accord serve
   --processes N`` on one port for each N in turn (a fresh database each), the same steps on
   each, then each step's ratios against the first N. CPU and RSS are the supervisor's and
   its children's (with the first of ``--clients``).
   With ``--clients accord,package`` the whole run (servers started afresh) is made once with
   each ``[harness.openai] client``, accord's own HTTP client and the openai package's, the
   stream steps of the two alternating count by count; saturation is the tokens per second
   one full core of server CPU would carry at the measured CPU per token.
2. **Parked** (``--parked``): conversations started with one quick turn each (the model
   answers at once) until each count, the server's RSS (VmRSS, all nodes) at each: MiB, and
   KiB per parked conversation between one count and the next.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_scaleout import _backends, _cpu_seconds, fresh_database  # noqa: E402
from harness_nodes import node  # noqa: E402
from run import Server, fake_model, load, machine, parse_in_venv  # noqa: E402

PARTICIPANT = "bench"
STAMP = re.compile(rb"@(\d{6,})\D")
TASK_ID = re.compile(rb'"task":\{"id":"([0-9a-f-]{36})"')
END = b"\r\n0\r\n\r\n"  # the last chunk of a chunked response
CHUNK = b'"artifactUpdate"'  # one SSE event of a streamed chunk


def request(method: str, text: str, task_id: str) -> bytes:
    message: dict[str, object] = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if task_id:
        message["taskId"] = task_id
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}
    ).encode()
    head = (
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"A2A-Version: 1.0\r\nX-Participant-Id: {PARTICIPANT}\r\nConnection: close\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class Exchange(asyncio.Protocol):
    """One request on a connection of its own; the response's stamps timed as they arrive."""

    def __init__(self, payload: bytes, seen: set[int], latencies: list[int]) -> None:
        self.payload = payload
        self.seen = seen
        self.latencies = latencies
        self.tokens = 0
        self.chunks = 0  # artifact chunks (SSE events) that carried them
        self.task_id = ""
        self.tail = b""
        self.parked = False
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        transport.write(self.payload)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        now = time.monotonic_ns()
        seen = self.tail + data
        self.chunks += seen.count(CHUNK) - self.tail.count(CHUNK)  # (once each)
        for match in STAMP.finditer(seen):
            stamp = int(match[1])
            if stamp not in self.seen:  # the turn's last events repeat the text
                self.seen.add(stamp)
                self.latencies.append(now - stamp)
                self.tokens += 1
        if not self.task_id and (found := TASK_ID.search(seen)):
            self.task_id = found[1].decode()
        self.parked = self.parked or b"TASK_STATE_INPUT_REQUIRED" in seen
        self.tail = seen[-64:]
        if seen.endswith(END) and self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def exchange(port: int, payload: bytes, seen: set[int], latencies: list[int]) -> Exchange:
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_connection(
        lambda: Exchange(payload, seen, latencies), "127.0.0.1", port
    )
    await protocol.done
    return protocol


@dataclass
class Step:
    latencies: list[int] = field(default_factory=list)  # ns, token to client
    turns: list[int] = field(default_factory=list)  # ns, turn time
    tokens: int = 0
    chunks: int = 0
    bad: int = 0
    sample: str = ""


async def conversation(port: int, delay: float, turns: int, tokens: int, step: Step) -> None:
    await asyncio.sleep(delay)
    seen: set[int] = set()
    task_id = ""
    for _ in range(turns):
        began = time.monotonic_ns()
        done = await exchange(port, request("SendStreamingMessage", "go", task_id), seen,
                              step.latencies)  # fmt: skip
        step.turns.append(time.monotonic_ns() - began)
        step.tokens += done.tokens
        step.chunks += done.chunks
        task_id = task_id or done.task_id
        if done.tokens != 2 * tokens or not done.parked or not task_id:
            step.bad += 1
            step.sample = step.sample or f"{done.tokens} tokens, parked {done.parked}"


async def streams(ports: list[int], count: int, turns: int, tokens: int) -> Step:
    step = Step()
    await asyncio.gather(
        *(conversation(ports[n % len(ports)], n / count, turns, tokens, step) for n in range(count))
    )
    return step


async def park(ports: list[int], count: int, concurrency: int) -> int:
    """Start ``count`` conversations (one quick turn each); the number that did not park."""
    left = iter(range(count))
    bad = 0

    async def worker() -> None:
        nonlocal bad
        for n in left:
            payload = request("SendMessage", f"instant {n}", "")
            done = await exchange(ports[n % len(ports)], payload, set(), [])
            bad += not done.parked

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return bad


def ms(values: list[int], share: float) -> float:
    """The ``share`` percentile of ``values`` (ns), in ms."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] / 1e6 if ordered else 0.0


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a supervisor's children: accord serve --processes N)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo.extend(int(child) for child in task.read_text().split())
    return found


def server_cpu(servers: list[Server]) -> float:
    """CPU seconds so far of the servers, their children included."""
    return sum(_cpu_seconds(pid) for s in servers if s.process for pid in tree(s.process.pid))


def process_rss_kib(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def server_rss_kib(server: Server) -> int:
    assert server.process is not None
    return sum(process_rss_kib(pid) for pid in tree(server.process.pid))


def rss_kib(servers: list[Server]) -> int:
    return sum(server_rss_kib(server) for server in servers)


def wait_processes(server: Server, count: int) -> None:
    """Once ``count`` children of ``accord serve --processes`` say they listen."""
    deadline = time.monotonic() + 120
    while len(re.findall(r"accord\.server: listening on ", server.log.read_text())) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{server.name}: {count} processes did not start; see {server.log}")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", default="10,100,300,1000", help="concurrent conversations")
    parser.add_argument("--turns", type=int, default=3, help="turns per conversation")
    parser.add_argument("--tokens", type=int, default=20, help="text chunks per model call")
    parser.add_argument("--rate", type=float, default=30.0, help="chunks per second per stream")
    parser.add_argument("--parked", default="", help="e.g. 1000,10000,30000")
    parser.add_argument("--concurrency", type=int, default=32, help="while parking")
    parser.add_argument("--store", choices=("sqlite", "pg"), default="sqlite")
    parser.add_argument(
        "--clients", default="accord", help="the model's HTTP client(s): accord, package, or both"
    )
    parser.add_argument("--profile", type=Path, help="cProfile the (SQLite) server to here")
    parser.add_argument(
        "--processes", default="", help="with --store pg: one node with each --processes N (1,2)"
    )
    parser.add_argument(
        "--pg",
        default=os.environ.get("ACCORD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres"),
        help="an admin DSN: the benchmark creates and drops its own database there",
    )
    args = parse_in_venv(parser, __file__)
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    model_s = 2 * (args.tokens - 1) / args.rate
    print(f"machine: {machine()}  load: {load()}", flush=True)
    print(f"model: {args.tokens} chunks at {args.rate:g}/s per call, 2 calls a turn: "
          f"{model_s * 1e3:.0f} ms of model time per turn", flush=True)  # fmt: skip
    clients = [c for c in args.clients.split(",") if c]
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        base_url, fake_pid = stack.enter_context(
            fake_model(work, "--rate", str(args.rate), "--tokens", str(args.tokens))
        )
        database = ""
        fleets: dict[str, list[Server]] = {}
        for client in clients:  # (one fleet of servers per client, all up at once)
            config = work / f"harness-{client}.toml"
            config.write_text(
                f'[harness]\nmodel = "openai:bench"\n[harness.openai]\nbase_url = "{base_url}"\n'
                f'client = "{client}"\n'
            )
            if args.processes:
                if args.store != "pg":
                    parser.error(
                        "--processes needs --store pg (several processes share PostgreSQL)"
                    )
                by_processes(args, config, work, fake_pid, model_s)
                print(f"load at end: {load()}")
                return
            home = work / client
            home.mkdir()
            if args.store == "pg":
                dsn = stack.enter_context(fresh_database(args.pg))
                database = urlsplit(dsn).path.lstrip("/")
                servers = [node(name, dsn, config, home) for name in ("node-a", "node-b")]
            else:
                servers = [node("node", f"sqlite:///{home / 't.db'}", config, home)]
                if args.profile:
                    servers[0].argv[1:1] = ["-m", "cProfile", "-o", str(args.profile)]
            for server in servers:  # one after the other: the first creates the schema
                server.start()
                stack.callback(server.stop)
            # warm up: imports, connections, caches
            asyncio.run(park([s.port for s in servers], 20, 4))
            fleets[client] = servers
        for count in [int(c) for c in args.streams.split(",") if c]:
            for client, servers in fleets.items():
                if len(fleets) > 1:
                    print(f"client={client:8}", end=" ", flush=True)
                stream_step(servers, fake_pid, count, args.turns, args.tokens, model_s, database)
        if args.parked:
            for client, servers in fleets.items():
                if len(fleets) > 1:
                    print(f"client={client}")
                parked_steps(servers, [int(c) for c in args.parked.split(",")], args.concurrency)
        print(f"load at end: {load()}")
    if args.profile:
        by_package(args.profile)


def by_processes(
    args: argparse.Namespace, config: Path, work: Path, fake_pid: int, model_s: float
) -> None:
    """One ``accord serve --processes N`` node (a fresh database each) for each N of
    ``--processes``, the streams on each, then each step against the first N's."""
    counts = [int(c) for c in args.streams.split(",") if c]
    steps: dict[int, list[dict[str, float]]] = {}
    for processes in [int(p) for p in args.processes.split(",")]:
        with contextlib.ExitStack() as stack:
            dsn = stack.enter_context(fresh_database(args.pg))
            database = urlsplit(dsn).path.lstrip("/")
            server = node(f"processes-{processes}", dsn, config, work)
            server.argv += ["--processes", str(processes), "--log-level", "info"]
            server.start()
            stack.callback(server.stop)
            wait_processes(server, processes)
            print(f"--processes {processes}: {len(tree(server.process.pid))} processes "  # type: ignore[union-attr]
                  f"(the supervisor and its children)", flush=True)  # fmt: skip
            asyncio.run(park([server.port], 20, 4))  # warm up every child a little
            steps[processes] = [
                stream_step([server], fake_pid, n, args.turns, args.tokens, model_s, database)
                for n in counts
            ]
            if args.parked:
                parked_steps([server], [int(c) for c in args.parked.split(",")], args.concurrency)
    first, *others = steps
    for processes in others:
        for n, base, step in zip(counts, steps[first], steps[processes], strict=True):
            print(
                f"N={n:<5} --processes {processes} / {first}: tokens/s "
                f"{step['tokens_s'] / base['tokens_s']:.2f}x, token to client p50 "
                f"{step['p50'] / base['p50']:.2f}x p99 {step['p99'] / base['p99']:.2f}x, turn "
                f"p50 {step['turn_p50'] / base['turn_p50']:.2f}x, server CPU "
                f"{step['cpu'] / base['cpu']:.2f}x, PostgreSQL CPU "
                f"{step['db'] / max(base['db'], 1e-9):.2f}x (machine busy {base['machine']:.0%} "
                f"and {step['machine']:.0%})",
                flush=True,
            )


def machine_ticks() -> tuple[int, int]:
    """(busy, all) clock ticks of every core so far (/proc/stat): how full the machine is."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)


def database_cpu(database: str) -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend serving ``database`` (none: "")."""
    return {pid: _cpu_seconds(pid) for pid in _backends(database)} if database else {}


def stream_step(
    servers: list[Server], fake_pid: int, count: int, turns: int, tokens: int, model_s: float,
    database: str,
) -> dict[str, float]:  # fmt: skip
    """``count`` conversations streaming at once; one line of numbers (and them, returned)."""
    ports = [server.port for server in servers]
    cpu, backends = server_cpu(servers), database_cpu(database)
    fake_cpu, client_cpu = _cpu_seconds(fake_pid), time.process_time()
    busy, ticks = machine_ticks()
    began = time.monotonic()
    step = asyncio.run(streams(ports, count, turns, tokens))
    wall = time.monotonic() - began
    busy_now, ticks_now = machine_ticks()
    machine_busy = (busy_now - busy) / max(1, ticks_now - ticks)  # of all cores
    cpu = server_cpu(servers) - cpu
    fake_cpu = _cpu_seconds(fake_pid) - fake_cpu
    client_cpu = time.process_time() - client_cpu
    db_cpu = sum(now - backends.get(pid, 0.0) for pid, now in database_cpu(database).items())
    db = f" PostgreSQL {db_cpu / wall:4.0%}" if database else ""
    over = [t - int(model_s * 1e9) for t in step.turns]
    flag = "" if not step.bad else f"  INVALID {step.bad} bad turns: {step.sample}"
    tail, turn = step.latencies, step.turns
    print(
        f"N={count:<5} {step.tokens / wall:6.0f} tokens/s | token to client ms p50 "
        f"{ms(tail, 0.5):6.2f} p99 {ms(tail, 0.99):7.2f} p99.9 {ms(tail, 0.999):7.2f} | turn ms "
        f"p50 {ms(turn, 0.5):5.0f} p99 {ms(turn, 0.99):5.0f} max {ms(turn, 1.0):5.0f}, over the "
        f"model p50 {ms(over, 0.5):+5.0f} p99 {ms(over, 0.99):+5.0f} | server CPU "
        f"{cpu / wall:4.0%} {cpu / max(1, step.tokens) * 1e6:5.0f} us/token "
        f"(saturation {step.tokens / max(cpu, 1e-9):5.0f} tokens/s a core) "
        f"{cpu / max(1, len(turn)) * 1e3:5.1f} ms/turn | client {client_cpu / wall:4.0%} fake "
        f"{fake_cpu / wall:4.0%}{db} | machine busy {machine_busy:4.0%} of {os.cpu_count()} "
        f"cores | {step.tokens / max(1, step.chunks):4.2f} tokens/chunk | "
        f"RSS {rss_kib(servers) / 1024:4.0f} MiB{flag}",
        flush=True,
    )
    return {
        "tokens_s": step.tokens / wall,
        "p50": ms(tail, 0.5),
        "p99": ms(tail, 0.99),
        "turn_p50": ms(turn, 0.5),
        "cpu": cpu / wall,
        "db": db_cpu / wall,
        "machine": machine_busy,
    }


def parked_steps(servers: list[Server], sizes: list[int], concurrency: int) -> None:
    """Conversations parked up to each size; RSS at each."""
    ports = [server.port for server in servers]
    total, before = 0, rss_kib(servers)
    print(f"parked: 0 (after the streams) RSS {before / 1024:.1f} MiB", flush=True)
    for count in sizes:
        began = time.monotonic()
        bad = asyncio.run(park(ports, count - total, concurrency))
        took = time.monotonic() - began
        now = rss_kib(servers)
        per = (now - before) / (count - total)
        nodes = " + ".join(f"{server_rss_kib(s) / 1024:.1f}" for s in servers)
        flag = f"  INVALID {bad} not parked" if bad else ""
        print(
            f"parked {count:>7}: RSS {now / 1024:7.1f} MiB ({nodes}), {per:6.2f} KiB per "
            f"conversation since {total} ({(count - total) / took:.0f} conversations/s){flag}",
            flush=True,
        )
        total, before = count, now


def by_package(profile: Path) -> None:
    """The profile's own time by package (accord by subpackage), then its top functions."""
    import pstats

    stats = pstats.Stats(str(profile))
    shares: dict[str, float] = {}
    for (path, _, name), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        if "site-packages/" in path:
            key = path.split("site-packages/")[1].split("/")[0]
        elif "/src/accord/" in path:
            key = "accord." + path.split("/src/accord/")[1].split("/")[0]
        elif path == "~":
            key = name
        else:
            key = "stdlib " + Path(path).name
        shares[key] = shares.get(key, 0.0) + own
    total = sum(shares.values())
    for key, own in sorted(shares.items(), key=lambda item: -item[1])[:25]:
        print(f"{own:7.3f} s {own / total:6.1%}  {key}")
    stats.sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
