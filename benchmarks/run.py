"""accord against the official a2a-sdk, in one run on one machine, like for like.

    python3 benchmarks/run.py                     # --seconds 5 --repeat 3 --connections 1,8,32

Creates (once) its own environment in benchmarks/.venv with accord (this checkout, editable),
a2a-sdk (with its ``sqlite`` extra), uvicorn, uvloop and httptools, and re-runs itself there.
Needs ``wrk`` on PATH.

Servers, all on 127.0.0.1, all on uvloop + httptools without access log, in two pairings
that a user weighs against each other:

- durable: ``accord serve`` with the echo agent and its default store (SQLite, default
  durability) in a temporary directory on the machine's disk, on its default HTTP server
  (accord's own front; ``--accord-http uvicorn`` for uvicorn): JSON-RPC at ``/``, HTTP+JSON
  at ``/message:send`` etc.; against the a2a-sdk echo agent of the interop tests
  (benchmarks/sdk_echo.py) on the SDK's own durable store, ``DatabaseTaskStore`` and
  ``DatabasePushNotificationConfigStore`` on one SQLite file in the same directory;
- in memory: ``accord serve --store memory://`` (benchmarks/accord_memory.py, which fills
  the store first) against the same SDK agent on ``InMemoryTaskStore``; the SDK on uvicorn
  (its documented server), JSON-RPC at ``/a2a/jsonrpc``;
- a bare ASGI JSON echo (benchmarks/asgi_echo.py) on the same HTTP server as accord: the
  ceiling; and, when that is not uvicorn, the same echo on uvicorn for reference.

The headline table is the like-for-like ratios (accord SQLite / SDK SQLite, accord memory /
SDK memory); then accord against the limit: GetTask against the bare echo, and a durable
SendMessage at 1 connection against the echo's round trip plus one fsync of the disk the
stores are on (timed in the same run). The older table (accord durable against the SDK in
memory) follows, as information.

Phases: (1) both stores filled with 1,000 completed tasks: GetTask and ListTasks, peak RSS;
then SendMessage and SendStreamingMessage (which add tasks); (2) new servers on stores filled
with 100,000 tasks: GetTask and ListTasks, peak RSS. Every wrk run checks every response
body (benchmarks/lua.py); a run with a bad response or a socket error is marked INVALID.
Latency is given as recorded (p50 / p99 / p99.9 of the requests made) with wrk's own p99 /
p99.9, corrected for coordinated omission, beside it in brackets.
Within a repeat the servers of one scenario and connection count run back to back; the
table shows medians over the repeats.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

# benchmarks/ is not a package: run as a script, or imported with benchmarks/ on the path
from headline import against_limit, like_for_like, like_for_like_tails
from load_results import TITLES, Result, load_result, medians, tail

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VENV = HERE / ".venv"
REQUIREMENTS = [
    "a2a-sdk[http-server,grpc,sqlite]==1.3.0",
    "uvicorn>=0.29",
    "uvloop",
    "httptools",
    "py-spy",
    # benchmarks/telemetry_cost.py: tracing on (the otel extra)
    "opentelemetry-sdk",
    "opentelemetry-exporter-otlp-proto-http",
]


# --- environment ---------------------------------------------------------------------------


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv(script: str = __file__) -> None:
    """Create or refresh benchmarks/.venv, then re-run ``script`` with its interpreter."""
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    stamp = hashlib.sha256(
        (REPO / "pyproject.toml").read_bytes() + "\n".join(REQUIREMENTS).encode()
    ).hexdigest()
    marker = VENV / ".installed"
    if not marker.exists() or marker.read_text() != stamp:
        print(f"creating {VENV} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        pip = [str(_venv_python()), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True)
        subprocess.run([*pip, "-e", str(REPO), *REQUIREMENTS], check=True)
        marker.write_text(stamp)
    os.execv(str(_venv_python()), [str(_venv_python()), script, *sys.argv[1:]])


def parse_in_venv(parser: argparse.ArgumentParser, script: str) -> argparse.Namespace:
    """Parse a benchmark's arguments (with ``--no-venv``; ``--json`` for its runs), then
    re-run ``script`` in benchmarks/.venv unless told not to."""
    parser.add_argument("--json", type=Path, help="also write every run here")
    parser.add_argument("--no-venv", action="store_true", help="use this interpreter as is")
    args = parser.parse_args()
    if not args.no_venv:
        ensure_venv(script)
    return args


def machine() -> dict[str, str]:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    wrk_says = ""
    if shutil.which("wrk"):  # not installed: the run says so instead of failing
        wrk = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
        wrk_says = (wrk.stdout or wrk.stderr).strip()
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return {
        "commit": commit.stdout.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": str(os.cpu_count()),
        "cpu": model,
        "python": sys.version.split()[0],
        "wrk": wrk_says.splitlines()[0] if wrk_says else "not installed",
    }


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# --- servers -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def fake_model(work: Path, *options: str) -> Iterator[tuple[str, int]]:
    """benchmarks/fake_rate_model.py in its own process (``options``: its flags, e.g.
    ``--rate 30 --tokens 20``), its log in ``work``: its base URL and pid."""
    port = free_port()
    argv = [sys.executable, str(HERE / "fake_rate_model.py"), "--port", str(port), *options]
    log_path = work / "fake.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while b"serving" not in log_path.read_bytes():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the fake model did not start: {log_path.read_text()}")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/v1", process.pid
    finally:
        process.terminate()
        process.wait(10)


@dataclass
class Server:
    name: str
    argv: list[str]
    port: int
    probe: str  # a path answering GET when the server is up
    log: Path
    grpc_port: int = 0
    process: subprocess.Popen[bytes] | None = None
    env: dict[str, str] | None = None  # the server's environment (None: this one's)
    start_seconds: float = 180  # how long it may take to answer (a store filled at start)

    def start(self) -> None:
        out = self.log.open("ab")
        self.process = subprocess.Popen(
            self.argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True,
            env=self.env,
        )  # fmt: skip
        deadline = time.monotonic() + self.start_seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited; see {self.log}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}{self.probe}", timeout=2)
                return
            except urllib.error.HTTPError:
                return  # answering, if not to this
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not start; see {self.log}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far (all its threads)."""
        assert self.process is not None
        stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def memory(self) -> dict[str, int]:
        """Peak and current resident set (KiB) from /proc/PID/status."""
        assert self.process is not None
        found: dict[str, int] = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                found[key] = int(value.split()[0])
        return found


@dataclass
class Target:
    """One server reached over one binding."""

    name: str  # accord-jsonrpc, accord-rest, sdk-jsonrpc, asgi-echo
    server: Server
    binding: str  # jsonrpc, rest, echo, grpc
    path: str

    @property
    def url(self) -> str:
        if self.binding == "grpc":
            return f"127.0.0.1:{self.server.grpc_port}"
        return f"http://127.0.0.1:{self.server.port}{self.path}"


# --- wrk -----------------------------------------------------------------------------------


def parse_load_output(stdout: str) -> tuple[dict[str, float], str]:
    """The ``RESULT {json}`` line of a load run (wrk's done() or grpc_load.py) and the first
    bad response's ``BADSAMPLE``; ({}, "") when there is no result."""
    data: dict[str, float] = {}
    sample = ""
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            data = json.loads(line[len("RESULT ") :])
        elif line.startswith("BADSAMPLE "):
            sample = line[len("BADSAMPLE ") :]
    return data, sample


def run_wrk(
    target: Target,
    scenario: str,
    connections: int,
    seconds: float,
    workdir: Path,
    *,
    stored: int,
    total: int,
    repeat: int,
    wrk_threads: int = 1,
    lua_text: str | None = None,
) -> Result:
    """One load run against ``target``: wrk with the scenario's Lua script from
    benchmarks/lua.py (or ``lua_text``, a script with the same ``RESULT`` line, made for
    ``connections``), or grpc_load.py for gRPC; the server's CPU time per request from
    /proc. Its latency: as recorded, and wrk's corrected beside it (load_results.py)."""
    from lua import script  # benchmarks/lua.py

    run_id = f"{scenario}{connections}r{repeat}t{time.monotonic_ns() % 10**9}"
    if target.binding == "grpc":
        argv = [sys.executable, str(HERE / "grpc_load.py"), "--target", target.url]
        argv += ["--scenario", scenario, "-c", str(connections), "-d", str(seconds)]
        argv += ["--stored", str(stored), "--total", str(total)]
    else:
        path = workdir / f"{target.name}-{scenario}-{connections}.lua"
        text = lua_text or script(scenario, target.binding, run=run_id, stored=stored,
                                  total=total, connections=connections)  # fmt: skip
        path.write_text(text)
        # wrk needs a connection per thread at least.
        threads = min(wrk_threads, connections)
        argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{int(seconds)}s", "--timeout", "30s"]
        argv += ["-s", str(path), target.url]
    cpu_before = target.server.cpu_seconds()
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    cpu = target.server.cpu_seconds() - cpu_before
    data, sample = parse_load_output(out.stdout)
    if not data:
        raise RuntimeError(f"wrk gave no result: {out.stdout}\n{out.stderr}")
    return load_result(data, sample, scenario=scenario, stored=stored, target=target.name,
                       connections=connections, repeat=repeat, cpu_seconds=cpu)  # fmt: skip


# --- the run -------------------------------------------------------------------------------


@dataclass
class Bench:
    args: argparse.Namespace
    workdir: Path
    results: list[Result] = field(default_factory=list)
    memory: dict[str, dict[str, int]] = field(default_factory=dict)
    fsync_us: list[float] = field(default_factory=list)  # medians of each timing

    def accord(self, db: Path | None, name: str, *, stored: int = 0) -> Server:
        """accord serve on SQLite file ``db`` (filled beforehand), or with ``db`` None on its
        in-memory store filled with ``stored`` tasks (benchmarks/accord_memory.py)."""
        port = free_port()
        if db is None:
            argv = [sys.executable, str(HERE / "accord_memory.py"), "--tasks", str(stored)]
            argv += ["serve", "--store", "memory://"]
        else:
            store = f"sqlite:///{db}"
            if self.args.accord_sync:
                store += f"?synchronous={self.args.accord_sync}"
            argv = [sys.executable, "-m", "accord", "serve", "--store", store]
        argv += ["--host", "127.0.0.1", "--port", str(port), "--agent", "echo"]
        argv += ["--log-level", "warning", "--http", self.args.accord_http]
        grpc_port = free_port() if self.args.grpc and db is not None else 0
        if grpc_port:
            argv += ["--grpc-port", str(grpc_port)]
        return Server(name, argv, port, "/.well-known/agent-card.json", self.log(name), grpc_port)

    def sdk(self, tasks: int, name: str, db: Path | None = None) -> Server:
        """The SDK's echo agent in memory, or with ``db`` on its durable SQLite store."""
        port = free_port()
        argv = [sys.executable, str(HERE / "sdk_echo.py"), "--port", str(port)]
        grpc_port = free_port()
        argv += ["--grpc-port", str(grpc_port), "--tasks", str(tasks)]
        if db is not None:
            argv += ["--db", str(db)]
        return Server(name, argv, port, "/.well-known/agent-card.json", self.log(name), grpc_port)

    def echo(self, http: str) -> Server:
        port = free_port()
        argv = [sys.executable, str(HERE / "asgi_echo.py"), "--port", str(port), "--http", http]
        name = "asgi-echo" if http == self.args.accord_http else f"asgi-echo-{http}"
        return Server(name, argv, port, "/", self.log(name))

    def log(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def populate(self, db: Path, count: int) -> None:
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                str(HERE / "populate_accord.py"),
                "--db",
                str(db),
                "--count",
                str(count),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        print(
            f"  accord store filled with {count:,} tasks in {time.perf_counter() - started:.1f} s"
        )

    def measure(self, targets: list[Target], scenarios: list[str], stored: int) -> None:
        a = self.args
        for repeat in range(a.repeat):
            for scenario in scenarios:
                for connections in a.connections:
                    for target in targets:
                        if target.binding == "echo" and scenario != "get":
                            continue
                        if repeat == 0 and not a.no_warmup:
                            run_wrk(target, scenario, 4, 1, self.workdir, stored=stored,
                                    total=stored, repeat=-1)  # fmt: skip
                        result = run_wrk(
                            target,
                            scenario,
                            connections,
                            a.seconds,
                            self.workdir,
                            stored=stored,
                            total=stored,
                            repeat=repeat,
                            wrk_threads=a.wrk_threads,
                        )
                        self.results.append(result)
                        flag = "" if result.valid else f"  INVALID {result.sample[:200]}"
                        print(
                            f"  [{repeat + 1}/{a.repeat}] {scenario:6} {stored:>6}"
                            f" c{connections:<2}"
                            f" {target.name:18} {result.rps:9.1f} req/s"
                            f"  p50/p99/p99.9 {tail(result)} ms"
                            f"  cpu {result.cpu_us:7.0f} us/req"
                            f"  bad {result.bad} err {result.socket_errors}{flag}",
                            flush=True,
                        )

    def phase(self, stored: int, scenarios: list[str], with_echo: bool) -> None:
        a = self.args
        db = self.workdir / f"accord-{stored}.db"
        self.populate(db, stored)
        accord = self.accord(db, f"accord-{stored}")
        accord_memory = self.accord(None, f"accord-memory-{stored}", stored=stored)
        sdk = self.sdk(stored, f"sdk-{stored}")
        sdk_db = self.sdk(stored, f"sdk-sqlite-{stored}", self.workdir / f"sdk-{stored}.db")
        echoes: list[Server] = []
        if with_echo:
            echoes.append(self.echo(a.accord_http))
            if a.accord_http != "uvicorn":
                echoes.append(self.echo("uvicorn"))
        servers = [accord, accord_memory, sdk, sdk_db, *echoes]
        try:
            for server in servers:
                server.start()
            # Each pairing's two servers back to back: the ratios compare runs seconds apart.
            targets = [
                Target("accord-jsonrpc", accord, "jsonrpc", "/"),
                Target("sdk-db-jsonrpc", sdk_db, "jsonrpc", "/a2a/jsonrpc"),
                Target("accord-mem-jsonrpc", accord_memory, "jsonrpc", "/"),
                Target("sdk-jsonrpc", sdk, "jsonrpc", "/a2a/jsonrpc"),
                Target("accord-rest", accord, "rest", ""),
            ]
            targets += [Target(echo.name, echo, "echo", "/") for echo in echoes]
            if a.grpc:
                targets.append(Target("accord-grpc", accord, "grpc", ""))
                targets.append(Target("sdk-grpc", sdk, "grpc", ""))
            reads = [s for s in scenarios if s in ("get", "list")]
            writes = [s for s in scenarios if s in ("send", "stream")]
            if reads:
                self.measure(targets, reads, stored)
            stores = (accord, accord_memory, sdk, sdk_db)
            for server in stores:
                self.memory[f"{server.name} after reads"] = server.memory()
            if writes:
                self.fsync_us.append(statistics.median(fsync_latency_us(self.workdir)))
                self.measure(targets, writes, stored)
                self.fsync_us.append(statistics.median(fsync_latency_us(self.workdir)))
                for server in stores:
                    self.memory[f"{server.name} after writes"] = server.memory()
            if a.hold:
                input(f"servers up (accord :{accord.port}, sdk :{sdk.port}); Enter to go on")
        finally:
            for server in servers:
                server.stop()


def fsync_latency_us(directory: Path, count: int = 300) -> list[float]:
    """Microseconds of each of ``count`` rounds of rewriting one 4 KiB page of a file in
    ``directory`` and fsyncing it: what one durable commit waits for on that disk."""
    path = directory / "fsync-probe"
    page = os.urandom(4096)
    times = []
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.pwrite(fd, page, 0)
        os.fsync(fd)
        for _ in range(count):
            began = time.perf_counter()
            os.pwrite(fd, page, 0)
            os.fsync(fd)
            times.append((time.perf_counter() - began) * 1e6)
    finally:
        os.close(fd)
        path.unlink()
    return times


# --- the table -----------------------------------------------------------------------------


def _cell(r: Result | None) -> str:
    if r is None:
        return "-"
    text = f"{r.rps:,.0f}"
    return text if r.valid else f"{text} INVALID"


def table(results: list[Result]) -> str:
    m = medians(results)
    lines = [
        "| scenario | tasks | conns | accord JSON-RPC req/s | accord HTTP+JSON req/s "
        "| a2a-sdk JSON-RPC req/s | ratio JSON-RPC | ratio HTTP+JSON | accord p50 ms "
        "| a2a-sdk p50 ms | accord CPU µs/req | a2a-sdk CPU µs/req | CPU ratio "
        "| ASGI echo req/s | accord / echo | echo CPU µs/req | echo on uvicorn req/s "
        "| echo on uvicorn CPU µs/req |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = sorted(
        {(k[0], k[1], k[3]) for k in m},
        key=lambda k: (list(TITLES).index(k[0]), k[1], k[2]),
    )
    for scenario, stored, conns in keys:
        rpc = m.get((scenario, stored, "accord-jsonrpc", conns))
        rest = m.get((scenario, stored, "accord-rest", conns))
        sdk = m.get((scenario, stored, "sdk-jsonrpc", conns))
        echo = m.get((scenario, stored, "asgi-echo", conns))
        uv_echo = m.get((scenario, stored, "asgi-echo-uvicorn", conns))

        def ratio(a: Result | None, b: Result | None) -> str:
            return f"{a.rps / b.rps:.1f}x" if a and b and b.rps else "-"

        share = f"{rpc.rps / echo.rps:.0%}" if rpc and echo else "-"
        cpu_ratio = f"{sdk.cpu_us / rpc.cpu_us:.1f}x" if rpc and sdk and rpc.cpu_us else "-"
        lines.append(
            f"| {TITLES[scenario]} | {stored:,} | {conns} | {_cell(rpc)} | {_cell(rest)} "
            f"| {_cell(sdk)} | {ratio(rpc, sdk)} | {ratio(rest, sdk)} "
            f"| {rpc.p50_ms if rpc else 0:.2f} | {sdk.p50_ms if sdk else 0:.2f} "
            f"| {rpc.cpu_us if rpc else 0:,.0f} | {sdk.cpu_us if sdk else 0:,.0f} "
            f"| {cpu_ratio} | {_cell(echo)} | {share} | {f'{echo.cpu_us:,.0f}' if echo else '-'} "
            f"| {_cell(uv_echo)} | {f'{uv_echo.cpu_us:,.0f}' if uv_echo else '-'} |"
        )
    return "\n".join(lines)


def grpc_table(results: list[Result]) -> str:
    m = medians(results)
    lines = [
        "| scenario (gRPC, Python load generator) | tasks | conns | accord req/s | a2a-sdk req/s "
        "| ratio | accord p50 ms | a2a-sdk p50 ms | accord CPU µs/req | a2a-sdk CPU µs/req |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = sorted(
        {(k[0], k[1], k[3]) for k in m if k[2] == "accord-grpc"},
        key=lambda k: (list(TITLES).index(k[0]), k[1], k[2]),
    )
    for scenario, stored, conns in keys:
        ours = m.get((scenario, stored, "accord-grpc", conns))
        theirs = m.get((scenario, stored, "sdk-grpc", conns))
        if ours is None or theirs is None:
            continue
        lines.append(
            f"| {TITLES[scenario]} | {stored:,} | {conns} | {_cell(ours)} | {_cell(theirs)} "
            f"| {ours.rps / theirs.rps:.1f}x | {ours.p50_ms:.2f} | {theirs.p50_ms:.2f} "
            f"| {ours.cpu_us:,.0f} | {theirs.cpu_us:,.0f} |"
        )
    return "\n".join(lines)


def list_latency(results: list[Result]) -> str:
    m = medians(results)
    lines = [
        "| ListTasks p50 latency | conns | 1,000 tasks ms | 100,000 tasks ms | ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    targets = ("accord-jsonrpc", "accord-mem-jsonrpc", "accord-rest", "accord-grpc")
    for target in (*targets, "sdk-jsonrpc", "sdk-db-jsonrpc", "sdk-grpc"):
        for conns in sorted({k[3] for k in m if k[0] == "list"}):
            small = m.get(("list", 1000, target, conns))
            big = m.get(("list", 100_000, target, conns))
            if small and big:
                lines.append(
                    f"| {target} | {conns} | {small.p50_ms:.2f} | {big.p50_ms:.2f} "
                    f"| {big.p50_ms / small.p50_ms:.2f}x |"
                )
    return "\n".join(lines)


def memory_table(memory: dict[str, dict[str, int]]) -> str:
    lines = ["| process | VmHWM (peak RSS) MiB | VmRSS MiB |", "|---|---:|---:|"]
    for name, values in memory.items():
        lines.append(
            f"| {name} | {values.get('VmHWM', 0) / 1024:.1f}"
            f" | {values.get('VmRSS', 0) / 1024:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=5, help="per wrk run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--connections", default="1,8,32")
    parser.add_argument("--scenarios", default="send,stream,get,list")
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--no-big", action="store_true", help="skip the 100k phase")
    parser.add_argument("--accord-sync", choices=["full", "normal"], help="default: accord's")
    parser.add_argument(
        "--accord-http",
        choices=["accord", "uvicorn"],
        default="accord",
        help="accord's HTTP server (default: its own front)",
    )
    parser.add_argument(
        "--wrk-threads",
        type=int,
        default=1,
        help="wrk threads (at most one per connection); see docs/benchmarks.md",
    )
    parser.add_argument("--no-warmup", action="store_true")
    parser.add_argument("--grpc", action="store_true", help="also gRPC (benchmarks/grpc_load.py)")
    parser.add_argument("--hold", action="store_true", help="wait before stopping servers")
    parser.add_argument("--json", type=Path, help="also write every run here")
    parser.add_argument("--no-venv", action="store_true", help="use this interpreter as is")
    args = parser.parse_args()
    if not args.no_venv:
        ensure_venv()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not on PATH (apt-get install wrk)")
    args.connections = [int(c) for c in args.connections.split(",")]
    scenarios = args.scenarios.split(",")
    sys.path.insert(0, str(HERE))

    info = machine()
    started_load = load()
    print(f"machine: {info}, load {started_load}", flush=True)
    with tempfile.TemporaryDirectory(prefix="accord-bench-", dir=_tmp_root()) as tmp:
        bench = Bench(args, Path(tmp))
        print(f"phase 1: {args.small:,} stored tasks", flush=True)
        bench.phase(args.small, scenarios, with_echo="get" in scenarios)
        big_scenarios = [s for s in scenarios if s in ("get", "list")]
        if big_scenarios and not args.no_big:
            print(f"phase 2: {args.big:,} stored tasks", flush=True)
            bench.phase(args.big, big_scenarios, with_echo=False)
        fsync = " / ".join(f"{us:.0f}" for us in bench.fsync_us)
        tables = [
            (f"like for like on {stored:,} stored tasks (accord / a2a-sdk, JSON-RPC, medians)",
             like_for_like(bench.results, stored))
            for stored in (args.small, args.big)
        ] + [
            (f"latency on {stored:,} stored tasks, p50 / p99 / p99.9 ms as recorded, wrk's"
             f" corrected p99 / p99.9 in brackets (medians)",
             like_for_like_tails(bench.results, stored))
            for stored in (args.small, args.big)
        ] + [
            ("against the limit", against_limit(bench.results, args.small, bench.fsync_us)),
            ("accord durable against the SDK in memory (information)", table(bench.results)),
            ("", grpc_table(bench.results)),
            ("", list_latency(bench.results)),
            ("", memory_table(bench.memory)),
        ]  # fmt: skip
        report = "\n\n".join(
            [
                *(
                    f"{title}:\n\n{text}" if title else text
                    for title, text in tables
                    if text.count("\n") > 1  # leave out tables without rows
                ),
                f"commit {info['commit']}, {info['date']}; "
                f"machine: {info['nproc']} CPUs, {info['cpu']}, Python {info['python']}, "
                f"{info['wrk']}; load average at start {started_load}, at end {load()}; "
                f"{args.repeat} repeats of {args.seconds:g} s, medians; "
                f"wrk threads: {args.wrk_threads} (at most one per connection); "
                f"fsync of one 4 KiB page on the stores' disk, median µs before and after "
                f"the writes: {fsync or '-'}",
            ]
        )
        print("\n" + report)
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "machine": info,
                        "wrk_threads": args.wrk_threads,
                        "results": [r.__dict__ for r in bench.results],
                        "memory": bench.memory,
                        "fsync_us": bench.fsync_us,
                    },
                    indent=1,
                )
            )


def _tmp_root() -> str | None:
    # The store's database goes on a real disk (fsync costs are part of the result), not tmpfs.
    for candidate in (os.environ.get("ACCORD_BENCH_DIR"), "/var/tmp"):
        if candidate and Path(candidate).is_dir():
            return candidate
    return None


if __name__ == "__main__":
    main()
