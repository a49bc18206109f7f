"""What metrics and tracing cost on accord's hot paths, measured in one run.

    python3 benchmarks/telemetry_cost.py                # --seconds 5 --repeat 3
    python3 benchmarks/telemetry_cost.py --baseline /tmp/accord-main   # also a tree without them

Servers (``accord serve``, echo agent, SQLite FULL with 1,000 completed tasks, accord's own
HTTP server), measured back to back in each repeat with benchmarks/run.py's wrk scripts:

- ``default``: metrics on (the default), tracing off (the default);
- ``metrics-off``: ``ACCORD_METRICS=false``;
- ``tracing-on``: ``ACCORD_TRACING=otlp`` exporting to a port nothing listens on (spans are
  made and batched, the export fails in the background), to show what tracing costs when on;
- ``baseline`` (with ``--baseline DIR``): the accord source tree at DIR (``git archive main
  src | tar -x -C DIR``), which has neither: what the telemetry code costs while off.

Scenarios: SendMessage and GetTask over JSON-RPC. Every response body is checked.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402  (benchmarks/run.py: servers, wrk, the environment)

STORED = 1000


def _server(
    workdir: Path, name: str, env: dict[str, str], source: Path | None
) -> tuple[bench.Server, dict[str, str]]:
    db = workdir / f"{name}.db"
    environ = {**os.environ, **env}
    if source is not None:
        environ["PYTHONPATH"] = str(source / "src")
    subprocess.run(
        [sys.executable, str(HERE / "populate_accord.py"), "--db", str(db), "--count", str(STORED)],
        check=True,
        stdout=subprocess.DEVNULL,
        env=environ,
    )
    port = bench.free_port()
    argv = [sys.executable, "-m", "accord", "serve", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--store", f"sqlite:///{db}", "--agent", "echo", "--log-level", "warning"]
    server = bench.Server(name, argv, port, "/.well-known/agent-card.json", workdir / f"{name}.log")
    return server, environ


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--connections", default="1,8,32")
    parser.add_argument("--baseline", type=Path, help="an accord source tree without telemetry")
    parser.add_argument("--no-venv", action="store_true")
    args = parser.parse_args()
    if not args.no_venv:
        bench.ensure_venv(__file__)
    connections = [int(c) for c in args.connections.split(",")]
    variants: dict[str, tuple[dict[str, str], Path | None]] = {
        "default": ({}, None),
        "metrics-off": ({"ACCORD_METRICS": "false"}, None),
        "tracing-on": (
            {
                "ACCORD_TRACING": "otlp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{bench.free_port()}",
            },
            None,
        ),
    }
    if args.baseline is not None:
        variants["baseline"] = ({}, args.baseline)
    results: dict[tuple[str, str, int], list[bench.Result]] = {}
    with tempfile.TemporaryDirectory(prefix="accord-telemetry-") as tmp:
        workdir = Path(tmp)
        servers = []
        for name, (env, source) in variants.items():
            server, environ = _server(workdir, name, env, source)
            servers.append((name, server, environ))
        try:
            for _, server, environ in servers:
                _start(server, environ)
            for repeat in range(args.repeat):
                for scenario in ("get", "send"):
                    for conns in connections:
                        for name, server, _ in servers:
                            target = bench.Target(f"accord-{name}", server, "jsonrpc", "/")
                            if repeat == 0:
                                bench.run_wrk(target, scenario, 4, 1, workdir, stored=STORED,
                                              total=STORED, repeat=-1)  # fmt: skip
                            result = bench.run_wrk(
                                target, scenario, conns, args.seconds, workdir,
                                stored=STORED, total=STORED, repeat=repeat,
                            )  # fmt: skip
                            results.setdefault((scenario, name, conns), []).append(result)
                            flag = "" if result.valid else "  INVALID"
                            print(
                                f"  [{repeat + 1}/{args.repeat}] {scenario:4} c{conns:<2}"
                                f" {name:12} {result.rps:9.1f} req/s"
                                f"  cpu {result.cpu_us:6.0f} us/req{flag}",
                                flush=True,
                            )
        finally:
            for _, server, _ in servers:
                server.stop()
    print()
    print(_table(results, list(variants), connections))


def _start(server: bench.Server, environ: dict[str, str]) -> None:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environ)
    try:
        server.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _table(
    results: dict[tuple[str, str, int], list[bench.Result]],
    names: list[str],
    connections: list[int],
) -> str:
    head = " | ".join(f"{n} req/s | {n} CPU µs/req" for n in names)
    lines = [
        f"| scenario | conns | {head} |",
        "|---|---:|" + "---:|---:|" * len(names),
    ]
    for scenario in ("send", "get"):
        for conns in connections:
            cells = []
            for name in names:
                runs = results.get((scenario, name, conns), [])
                if not runs:
                    cells.append("- | -")
                    continue
                valid = all(r.valid for r in runs)
                rps = statistics.median(r.rps for r in runs)
                cpu = statistics.median(r.cpu_us for r in runs)
                cells.append(f"{rps:,.0f}{'' if valid else ' INVALID'} | {cpu:,.0f}")
            title = "SendMessage" if scenario == "send" else "GetTask"
            lines.append(f"| {title} | {conns} | {' | '.join(cells)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
