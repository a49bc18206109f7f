"""Where one scenario's CPU goes, thread by thread, in ``accord serve``.

For each connection count: a fresh ``accord serve`` (echo agent, SQLite store filled with
``--stored`` completed tasks, the default durability) is loaded by wrk with the benchmark's
checked Lua script (benchmarks/lua.py); the CPU time of each of its threads
(``/proc/PID/task/*/stat``) is read before and after, and the store's group commit counters
(writes per commit) and each commit's wall and CPU time on the writer thread (the wall time
beyond the CPU is the fsync and waiting for the GIL) when it stops. JSON-RPC binding.

    python3 benchmarks/threads.py --scenario send       # --connections 1,8,32 --seconds 6

Like run.py it runs itself in benchmarks/.venv (created on first use) and needs ``wrk``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from run import HERE, Server, Target, ensure_venv, free_port, run_wrk

_TICK = os.sysconf("SC_CLK_TCK")


def serve(db: str, port: int) -> None:
    """The server side (``--serve``): accord serve's app, which says which thread is which
    once started, and its commit counters and the time each commit took once stopped."""
    import gc
    import threading

    from accord.app._build import build_app
    from accord.app._settings import Settings
    from accord.server import _runner as runner
    from accord.store import _writer
    from accord.store._sqlite import SqliteStore

    # Each commit's start (epoch seconds), wall and writer-thread CPU time (µs): the writer's
    # wall time beyond its CPU is the fsync and waiting for the GIL.
    timings: list[tuple[float, float, float]] = []
    commit = _writer.Writer._commit

    def timed_commit(self: _writer.Writer, conn: Any, batch: Any) -> Any:
        started, wall, cpu = time.time(), time.perf_counter(), time.thread_time()
        try:
            return commit(self, conn, batch)
        finally:
            wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
            timings.append((started, wall * 1e6, cpu * 1e6))

    _writer.Writer._commit = timed_commit  # type: ignore[method-assign]

    app = build_app(Settings(store=f"sqlite:///{db}", agent="echo"))
    engine = app.service.engine
    store = engine.store
    assert isinstance(store, SqliteStore)

    async def name_threads() -> None:
        names = {str(t.native_id): t.name for t in threading.enumerate()}
        print("THREADS " + json.dumps(names), flush=True)

    engine.on_start(name_threads)
    gc.collect()  # as accord serve does
    gc.freeze()
    runner.run(app, "127.0.0.1", port)
    print("COMMITS " + json.dumps(store.commit_stats._asdict()), flush=True)
    print("COMMIT_TIMES " + json.dumps(timings), flush=True)


def thread_ticks(pid: int) -> dict[str, int]:
    """User + system clock ticks of each thread of ``pid``, by thread id."""
    ticks: dict[str, int] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        ticks[tid] = int(fields[11]) + int(fields[12])
    return ticks


def _line(log: Path, prefix: str, missing: Any = None) -> Any:
    """The JSON the server printed after ``prefix`` (``missing``, or {}, if it did not)."""
    for line in log.read_text().splitlines():
        if line.startswith(prefix + " "):
            return json.loads(line[len(prefix) + 1 :])
    return {} if missing is None else missing


def measure(args: argparse.Namespace, filled: Path, workdir: Path, connections: int) -> str:
    db = workdir / f"c{connections}.db"
    shutil.copy(filled, db)
    port = free_port()
    log = workdir / f"accord-c{connections}.log"
    argv = [sys.executable, str(Path(__file__).resolve()), "--serve", str(db)]
    argv += ["--port", str(port)]
    server = Server(f"accord-c{connections}", argv, port, "/.well-known/agent-card.json", log)
    server.start()
    target = Target("accord-jsonrpc", server, "jsonrpc", "/")
    try:
        common = {"stored": args.stored, "total": args.stored, "wrk_threads": args.wrk_threads}
        run_wrk(target, args.scenario, connections, 2, workdir, repeat=0, **common)  # warm-up
        assert server.process is not None
        pid = server.process.pid
        before, started = thread_ticks(pid), time.time()
        result = run_wrk(
            target, args.scenario, connections, args.seconds, workdir, repeat=1, **common
        )
        after, ended = thread_ticks(pid), time.time()
    finally:
        server.stop()
    if not result.valid:
        return f"| {connections} | INVALID ({result.bad} bad, {result.socket_errors} errors) |"
    names = _line(log, "THREADS")
    commits = _line(log, "COMMITS")
    per_request = {
        tid: (after[tid] - before.get(tid, 0)) / _TICK / result.requests * 1e6 for tid in after
    }
    loop = per_request.pop(str(pid), 0.0)
    writer = sum(us for tid, us in per_request.items() if "sqlite-writer" in str(names.get(tid)))
    others = sum(per_request.values()) - writer
    writes, rounds = int(commits.get("writes", 0)), int(commits.get("commits", 0))
    per_commit = f"{writes / rounds:.1f}" if rounds else "-"
    timed = [t for t in _line(log, "COMMIT_TIMES", []) if started <= t[0] <= ended]
    if timed:
        walls = sorted(t[1] for t in timed)
        commit_wall = f"{walls[len(walls) // 2]:.0f}"
        commit_cpu = f"{sum(t[2] for t in timed) / len(timed):.0f}"
    else:
        commit_wall = commit_cpu = "-"
    return (
        f"| {connections} | {result.rps:,.0f} | {loop:.0f} | {writer:.0f} | {others:.0f}"
        f" | {loop + writer + others:.0f} | {per_commit} | {commit_wall} | {commit_cpu} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", choices=["send", "stream", "get"], default="send")
    parser.add_argument("--connections", default="1,8,32")
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--stored", type=int, default=1000, help="tasks in the store at start")
    parser.add_argument("--wrk-threads", type=int, default=1, help="as in run.py")
    parser.add_argument("--no-venv", action="store_true", help="use this interpreter as is")
    parser.add_argument("--serve", metavar="DB", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port)
        return
    if not args.no_venv:
        ensure_venv(__file__)
    if shutil.which("wrk") is None:
        sys.exit("wrk is not on PATH (apt-get install wrk)")
    with tempfile.TemporaryDirectory(prefix="accord-threads-", dir="/var/tmp") as folder:
        workdir = Path(folder)
        filled = workdir / "filled.db"
        populate = [sys.executable, str(HERE / "populate_accord.py"), "--db", str(filled)]
        subprocess.run([*populate, "--count", str(args.stored)], check=True, capture_output=True)
        print(f"{args.scenario}, JSON-RPC, {args.stored:,} stored tasks, {args.seconds} s per run")
        print(
            "\n| connections | req/s | event loop µs/req | SQLite writer µs/req"
            " | other threads µs/req | all µs/req | writes per commit"
            " | commit wall µs (p50) | commit CPU µs (mean) |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for connections in (int(c) for c in args.connections.split(",")):
            print(measure(args, filled, workdir, connections), flush=True)
            time.sleep(0.5)


if __name__ == "__main__":
    main()
