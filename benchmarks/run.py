"""accord against the official a2a-sdk, in one run on one machine.

    python3 benchmarks/run.py                     # --seconds 5 --repeat 3 --connections 1,8,32

Creates (once) its own environment in benchmarks/.venv with accord (this checkout, editable),
a2a-sdk, uvicorn, uvloop and httptools, and re-runs itself there. Needs ``wrk`` on PATH.

Servers, all on 127.0.0.1, all on uvloop + httptools without access log:

- ``accord serve`` with the echo agent and its default store (SQLite, default durability) in
  a temporary directory, on its default HTTP server (accord's own front; ``--accord-http
  uvicorn`` for uvicorn): JSON-RPC at ``/``, HTTP+JSON at ``/message:send`` etc.;
- the a2a-sdk echo agent of the interop tests (benchmarks/sdk_echo.py), in-memory store,
  JSON-RPC at ``/a2a/jsonrpc``, on uvicorn (the SDK's documented server);
- a bare ASGI JSON echo (benchmarks/asgi_echo.py) on the same HTTP server as accord: the
  ceiling; and, when that is not uvicorn, the same echo on uvicorn for reference.

Phases: (1) both stores filled with 1,000 completed tasks: GetTask and ListTasks, peak RSS;
then SendMessage and SendStreamingMessage (which add tasks); (2) new servers on stores filled
with 100,000 tasks: GetTask and ListTasks, peak RSS. Every wrk run checks every response
body (benchmarks/lua.py); a run with a bad response or a socket error is marked INVALID.
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
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
VENV = HERE / ".venv"
REQUIREMENTS = [
    "a2a-sdk[http-server,grpc]==1.3.0",
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


def machine() -> dict[str, str]:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    wrk = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
    return {
        "nproc": str(os.cpu_count()),
        "cpu": model,
        "python": sys.version.split()[0],
        "wrk": (wrk.stdout or wrk.stderr).splitlines()[0] if (wrk.stdout or wrk.stderr) else "",
    }


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# --- servers -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    name: str
    argv: list[str]
    port: int
    probe: str  # a path answering GET when the server is up
    log: Path
    grpc_port: int = 0
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        out = self.log.open("ab")
        self.process = subprocess.Popen(
            self.argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
        )
        deadline = time.monotonic() + 180
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


@dataclass
class Result:
    scenario: str
    stored: int
    target: str
    connections: int
    repeat: int
    rps: float
    p50_ms: float
    p99_ms: float
    mean_ms: float
    requests: int
    bad: int
    socket_errors: int
    cpu_us: float = 0.0  # server CPU time per request: robust to a busy machine
    sample: str = ""

    @property
    def valid(self) -> bool:
        return self.bad == 0 and self.socket_errors == 0 and self.requests > 0


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
) -> Result:
    from lua import script  # benchmarks/lua.py

    run_id = f"{scenario}{connections}r{repeat}t{time.monotonic_ns() % 10**9}"
    if target.binding == "grpc":
        argv = [sys.executable, str(HERE / "grpc_load.py"), "--target", target.url]
        argv += ["--scenario", scenario, "-c", str(connections), "-d", str(seconds)]
        argv += ["--stored", str(stored), "--total", str(total)]
    else:
        path = workdir / f"{target.name}-{scenario}-{connections}.lua"
        path.write_text(script(scenario, target.binding, run=run_id, stored=stored, total=total))
        # wrk needs a connection per thread at least.
        threads = min(wrk_threads, connections)
        argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{int(seconds)}s", "--timeout", "30s"]
        argv += ["-s", str(path), target.url]
    cpu_before = target.server.cpu_seconds()
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    cpu = target.server.cpu_seconds() - cpu_before
    data: dict[str, float] = {}
    sample = ""
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            data = json.loads(line[len("RESULT ") :])
        elif line.startswith("BADSAMPLE "):
            sample = line[len("BADSAMPLE ") :]
    if not data:
        raise RuntimeError(f"wrk gave no result: {out.stdout}\n{out.stderr}")
    return Result(
        scenario=scenario,
        stored=stored,
        target=target.name,
        connections=connections,
        repeat=repeat,
        rps=data["requests"] / (data["duration_us"] / 1e6),
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        mean_ms=data["mean_us"] / 1000,
        requests=int(data["requests"]),
        bad=int(data["bad"]),
        socket_errors=int(data["socket_errors"]),
        cpu_us=cpu * 1e6 / max(int(data["requests"]), 1),
        sample=sample,
    )


# --- the run -------------------------------------------------------------------------------


@dataclass
class Bench:
    args: argparse.Namespace
    workdir: Path
    results: list[Result] = field(default_factory=list)
    memory: dict[str, dict[str, int]] = field(default_factory=dict)

    def accord(self, db: Path, name: str) -> Server:
        port = free_port()
        store = f"sqlite:///{db}"
        if self.args.accord_sync:
            store += f"?synchronous={self.args.accord_sync}"
        argv = [sys.executable, "-m", "accord", "serve", "--host", "127.0.0.1"]
        argv += ["--port", str(port), "--store", store, "--agent", "echo"]
        argv += ["--log-level", "warning", "--http", self.args.accord_http]
        grpc_port = free_port() if self.args.grpc else 0
        if grpc_port:
            argv += ["--grpc-port", str(grpc_port)]
        return Server(name, argv, port, "/.well-known/agent-card.json", self.log(name), grpc_port)

    def sdk(self, tasks: int, name: str) -> Server:
        port = free_port()
        argv = [sys.executable, str(HERE / "sdk_echo.py"), "--port", str(port)]
        grpc_port = free_port()
        argv += ["--grpc-port", str(grpc_port), "--tasks", str(tasks)]
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
                            f" {target.name:14} {result.rps:9.1f} req/s  p50 {result.p50_ms:7.2f}"
                            f" ms  cpu {result.cpu_us:7.0f} us/req"
                            f"  bad {result.bad} err {result.socket_errors}{flag}",
                            flush=True,
                        )

    def phase(self, stored: int, scenarios: list[str], with_echo: bool) -> None:
        a = self.args
        db = self.workdir / f"accord-{stored}.db"
        self.populate(db, stored)
        accord = self.accord(db, f"accord-{stored}")
        sdk = self.sdk(stored, f"sdk-{stored}")
        echoes: list[Server] = []
        if with_echo:
            echoes.append(self.echo(a.accord_http))
            if a.accord_http != "uvicorn":
                echoes.append(self.echo("uvicorn"))
        servers = [accord, sdk, *echoes]
        try:
            for server in servers:
                server.start()
            targets = [
                Target("accord-jsonrpc", accord, "jsonrpc", "/"),
                Target("accord-rest", accord, "rest", ""),
                Target("sdk-jsonrpc", sdk, "jsonrpc", "/a2a/jsonrpc"),
            ]
            targets += [Target(echo.name, echo, "echo", "/") for echo in echoes]
            if a.grpc:
                targets.append(Target("accord-grpc", accord, "grpc", ""))
                targets.append(Target("sdk-grpc", sdk, "grpc", ""))
            reads = [s for s in scenarios if s in ("get", "list")]
            writes = [s for s in scenarios if s in ("send", "stream")]
            if reads:
                self.measure(targets, reads, stored)
            for server in (accord, sdk):
                self.memory[f"{server.name} after reads"] = server.memory()
            if writes:
                self.measure(targets, writes, stored)
                for server in (accord, sdk):
                    self.memory[f"{server.name} after writes"] = server.memory()
            if a.hold:
                input(f"servers up (accord :{accord.port}, sdk :{sdk.port}); Enter to go on")
        finally:
            for server in servers:
                server.stop()


# --- the table -----------------------------------------------------------------------------

TITLES = {
    "send": "SendMessage",
    "stream": "SendStreamingMessage",
    "get": "GetTask",
    "list": "ListTasks",
}


def medians(results: list[Result]) -> dict[tuple[str, int, str, int], Result]:
    """One Result per (scenario, stored, target, connections): the median repeat by req/s,
    with the latency medians of all repeats; INVALID if any repeat was."""
    groups: dict[tuple[str, int, str, int], list[Result]] = {}
    for r in results:
        if r.repeat >= 0:
            groups.setdefault((r.scenario, r.stored, r.target, r.connections), []).append(r)
    out = {}
    for key, rs in groups.items():
        out[key] = Result(
            scenario=key[0],
            stored=key[1],
            target=key[2],
            connections=key[3],
            repeat=len(rs),
            rps=statistics.median(r.rps for r in rs),
            p50_ms=statistics.median(r.p50_ms for r in rs),
            p99_ms=statistics.median(r.p99_ms for r in rs),
            mean_ms=statistics.median(r.mean_ms for r in rs),
            requests=sum(r.requests for r in rs),
            bad=sum(r.bad for r in rs),
            socket_errors=sum(r.socket_errors for r in rs),
            cpu_us=statistics.median(r.cpu_us for r in rs),
        )
    return out


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
    for target in ("accord-jsonrpc", "accord-rest", "accord-grpc", "sdk-jsonrpc", "sdk-grpc"):
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
        tables = [
            table(bench.results),
            grpc_table(bench.results),
            list_latency(bench.results),
            memory_table(bench.memory),
        ]
        report = "\n\n".join(
            [
                *(t for t in tables if t.count("\n") > 1),  # leave out tables without rows
                f"machine: {info['nproc']} CPUs, {info['cpu']}, Python {info['python']}, "
                f"{info['wrk']}; load average at start {started_load}, at end {load()}; "
                f"{args.repeat} repeats of {args.seconds:g} s, medians; "
                f"wrk threads: {args.wrk_threads} (at most one per connection)",
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
