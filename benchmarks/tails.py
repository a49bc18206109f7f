"""Tails as the store grows: p50 / p99 / p99.9 of SendMessage, SendStreamingMessage and
GetTask on ``accord serve --agent echo``, on its in-memory store and on SQLite, each filled
with 0, 100,000 (… ``--sizes``) completed tasks through the store API before the server
starts (size 0 holds the one task GetTask reads; benchmarks/populate_accord.py,
benchmarks/accord_memory.py --unfrozen). Target: p99 at most 5x p50, of the requests as
recorded; wrk's percentiles, corrected for coordinated omission, are printed beside them
(benchmarks/lua.py).

wrk drives each (benchmarks/lua.py checks every body; message ids are fresh per run, so
every SendMessage creates a task), after a 1 s warm-up; the server's CPU per request and its
RSS after the run come from /proc. ``--src DIR`` runs the servers on another checkout's
``src`` (``git archive main src | tar -x -C /tmp/main``): two builds compared in one run,
alternated per size and store.

    .venv/bin/python benchmarks/tails.py --sizes 0,100000 --seconds 5
    .venv/bin/python benchmarks/tails.py --sizes 0,100000 --src /tmp/main --seconds 5
    .venv/bin/python benchmarks/tails.py --sizes 1000000 --fills /var/tmp/fills --seconds 5

``--fills DIR`` keeps each filled SQLite file there (filled once, copied for each server):
a 1,000,000-task fill is minutes of a 2-core machine, and a second run reuses it.

Runs in the interpreter that starts it (needs uvloop and httptools, as accord serve's
default HTTP server does) and ``wrk`` on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_results import Result
from run import HERE, Server, Target, _tmp_root, free_port, load, machine, run_wrk

SCENARIOS = ("send", "stream", "get")


def server(name: str, store: str, stored: int, workdir: Path, src: str | None) -> Server:
    """accord serve with the echo agent on ``store`` ("memory" filled with ``stored`` tasks
    at start, or a SQLite file filled beforehand)."""
    port = free_port()
    # every collection timed (benchmarks/gc_pauses.py), written when the server stops
    argv = [sys.executable, str(HERE / "gc_pauses.py"), "--out", str(workdir / f"{name}.gc")]
    if store == "memory":
        argv += [str(HERE / "accord_memory.py"), "--unfrozen", "--tasks", str(max(stored, 1))]
        argv += ["serve", "--store", "memory://"]
    else:
        argv += ["-m", "accord", "serve", "--store", f"sqlite:///{store}"]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--agent", "echo"]
    argv += ["--log-level", "warning"]
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    # the in-memory store is filled before the server answers: ~10,000 tasks a second
    return Server(name, argv, port, "/.well-known/agent-card.json", workdir / f"{name}.log",
                  env=env, start_seconds=180 + stored / 2000)  # fmt: skip


def populate(db: Path, count: int, src: str | None, fills: Path | None = None) -> None:
    """Fill SQLite file ``db`` with ``count`` tasks; with ``fills``, copy the one kept there
    (filling it first if it is not there yet)."""
    import shutil
    import subprocess

    kept = fills / f"{'main' if src else 'this'}-sqlite-{count}.db" if fills else None
    if kept is not None and kept.exists():
        shutil.copyfile(kept, db)
        return
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    target = kept.with_suffix(".part") if kept is not None else db
    argv = [sys.executable, str(HERE / "populate_accord.py"), "--db", str(target)]
    subprocess.run([*argv, "--count", str(count)], check=True, env=env, stdout=subprocess.DEVNULL)
    if kept is not None:
        target.rename(kept)
        shutil.copyfile(kept, db)


def stalls(seconds: float = 3.0) -> str:
    """What the machine does to any process: the gaps a busy loop sees (scheduling, steal)."""
    gaps: list[float] = []
    now = time.perf_counter()
    end = now + seconds
    while now < end:
        last, now = now, time.perf_counter()
        if now - last > 0.002:
            gaps.append((now - last) * 1000)
    said = f"machine: a busy loop stalled > 2 ms {len(gaps)}x in {seconds:.0f} s"
    if not gaps:
        return said
    return said + "; longest " + ", ".join(f"{g:.0f}" for g in sorted(gaps)[-5:]) + " ms"


def report(
    build: str, store: str, stored: int, scenario: str, conns: int, r: Result, rss: float
) -> dict[str, Any]:
    """One cell's line: p50 / p99 / p99.9 as recorded and their p99/p50 (the target's), then
    wrk's corrected p99 / p99.9 and its p99/p50 (benchmarks/lua.py)."""
    ratio = r.p99_ms / r.p50_ms if r.p50_ms else 0
    wrk_ratio = r.wrk_p99_ms / r.wrk_p50_ms if r.wrk_p50_ms else 0
    print(
        f"{build:5} {store:6} {stored:>8,} {scenario:6} c{conns:<2}"
        f" {r.rps:8.0f} req/s  recorded p50 {r.p50_ms:7.2f}  p99 {r.p99_ms:7.2f}  p99.9"
        f" {r.p999_ms:7.2f}  p99/p50 {ratio:5.1f}  wrk p50 {r.wrk_p50_ms:7.2f}  p99"
        f" {r.wrk_p99_ms:7.2f}  p99.9 {r.wrk_p999_ms:7.2f}  p99/p50 {wrk_ratio:5.1f}"
        f"  max {r.max_ms:7.1f} ms  cpu {r.cpu_us:5.0f} us  rss {rss:5.0f} MiB"
        f"{'' if r.valid else '  INVALID ' + r.sample[:100]}",
        flush=True,
    )
    return {"build": build, "store": store, "stored": stored, "scenario": scenario,
            "conns": conns, "rps": r.rps, "p50": r.p50_ms, "p99": r.p99_ms,
            "p999": r.p999_ms, "wrk_p50": r.wrk_p50_ms, "wrk_p99": r.wrk_p99_ms,
            "wrk_p999": r.wrk_p999_ms, "wrk_mean": r.wrk_mean_ms, "max": r.max_ms,
            "cpu_us": r.cpu_us, "rss_mib": rss, "valid": r.valid}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="0,100000")
    parser.add_argument("--stores", default="memory,sqlite")
    parser.add_argument("--connections", default="1,8")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--src", help="also run the servers on this checkout's src")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--fills", type=Path, help="keep filled SQLite files here, to reuse")
    args = parser.parse_args()
    builds: list[tuple[str, str | None]] = [("this", None)]
    if args.src:
        builds.insert(0, ("other", str(Path(args.src).resolve() / "src")))
    print(json.dumps(machine()), "load", load(), flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="accord-tails-", dir=_tmp_root()) as tmp:
        workdir = Path(tmp)
        print(stalls(), flush=True)
        echo_port = free_port()
        echo_argv = [sys.executable, str(HERE / "asgi_echo.py"), "--port", str(echo_port)]
        echo = Server("asgi-echo", echo_argv, echo_port, "/", workdir / "echo.log")
        echo.start()
        try:  # the floor: a bare JSON echo on accord's HTTP server, under the same wrk
            for conns in (int(c) for c in args.connections.split(",")):
                r = run_wrk(Target("asgi-echo", echo, "echo", "/"), "get", conns, args.seconds,
                            workdir, stored=1, total=1, repeat=0)  # fmt: skip
                rows.append(report("echo", "-", 0, "echo", conns, r, 0.0))
        finally:
            echo.stop()
        for stored in (int(s) for s in args.sizes.split(",")):
            for store in args.stores.split(","):
                for build, src in builds:
                    name = f"{build}-{store}-{stored}"
                    location = "memory"
                    if store == "sqlite":
                        db = workdir / f"{name}.db"
                        populate(db, max(stored, 1), src, args.fills)
                        location = str(db)
                    srv = server(name, location, stored, workdir, src)
                    srv.start()
                    assert srv.process is not None
                    srv.process.send_signal(signal.SIGUSR1)  # count collections from here
                    try:
                        target = Target(name, srv, "jsonrpc", "/")
                        for scenario in args.scenarios.split(","):
                            for conns in (int(c) for c in args.connections.split(",")):
                                run_wrk(target, scenario, 4, 1, workdir, stored=max(stored, 1),
                                        total=max(stored, 1), repeat=-1)  # fmt: skip
                                r = run_wrk(target, scenario, conns, args.seconds, workdir,
                                            stored=max(stored, 1), total=max(stored, 1),
                                            repeat=0)  # fmt: skip
                                rss = srv.memory().get("VmRSS", 0) / 1024
                                rows.append(report(build, store, stored, scenario, conns, r, rss))
                    finally:
                        srv.stop()
                    gc_file = workdir / f"{name}.gc"
                    if gc_file.exists():
                        pauses = json.loads(gc_file.read_text())
                        rows.append({"build": build, "store": store, "stored": stored,
                                     "gc": pauses})  # fmt: skip
                        print(f"{build:5} {store:6} {stored:>8,} collections: " + ", ".join(
                            f"gen{g} {p['count']}x total {p['total_ms']:.0f} ms"
                            f" longest {p['max_ms']:.1f} ms" for g, p in pauses.items()
                        ), flush=True)  # fmt: skip
    print(stalls(), flush=True)
    print("load", load())
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
