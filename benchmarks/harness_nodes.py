"""A conversation turn on two PostgreSQL nodes: the message lands on the node that did not
park the conversation, against one that lands on the node that did.

    python3 benchmarks/harness_nodes.py --no-venv     # --seconds 5 --repeat 3 --connections 1,8
        [--pg postgresql://postgres@127.0.0.1:5432/postgres]

Two ``accord serve --agent harness`` processes (the scripted model of harness_turns.py) on
one fresh PostgreSQL database (created on the ``--pg`` server, dropped after), as
docs/scale-out.md runs them. Each measurement starts ``--pool`` conversations (500) on node
A (each parked in INPUT_REQUIRED after its first turn), then continues them with wrk: ``other``
sends each continuation to node B, which reads the conversation node A left and runs the
turn; ``same`` sends them to node A. The two run back to back in every repeat, on fresh
pools both made before either runs, in alternating order. Every response body is checked
(harness_turns.py's ``turn`` check).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scaleout import fresh_database  # noqa: E402
from harness_turns import SCRIPT, lua, start_conversations  # noqa: E402
from load_results import Result  # noqa: E402
from run import Server, Target, free_port, load, machine, parse_in_venv, run_wrk  # noqa: E402


def node(name: str, dsn: str, config: Path, work: Path) -> Server:
    port = free_port()
    argv = [sys.executable, "-m", "accord", "serve", "--port", str(port), "--store", dsn]
    argv += ["--agent", "harness", "--config", str(config), "--log-level", "warning"]
    return Server(name, argv, port, "/.well-known/agent-card.json", work / f"{name}.log")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--connections", default="1,8")
    parser.add_argument("--pool", type=int, default=500, help="conversations per measurement")
    parser.add_argument(
        "--pg",
        default=os.environ.get("ACCORD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres"),
        help="an admin DSN: the benchmark creates and drops its own database there",
    )
    args = parse_in_venv(parser, __file__)
    connections = [int(c) for c in args.connections.split(",")]
    print(f"machine: {machine()}  load: {load()}", flush=True)
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp, fresh_database(args.pg) as dsn:
        work = Path(tmp)
        script = work / "script.json"
        script.write_text(json.dumps(SCRIPT))
        config = work / "harness.toml"
        config.write_text(f'[harness]\nmodel = "scripted:{script}"\n')
        a, b = node("node-a", dsn, config, work), node("node-b", dsn, config, work)
        try:
            a.start()  # one after the other: the first creates the schema
            b.start()
            for repeat in range(args.repeat):
                for count in connections:
                    # Both pools first, the order alternating by repeat: neither measurement
                    # runs while node A still settles the conversations just started.
                    pools = {s: start_conversations(a.port, args.pool) for s in ("other", "same")}
                    order = [("other", b), ("same", a)]
                    for scenario, target_node in order if repeat % 2 == 0 else order[::-1]:
                        text = lua("turn", f"{scenario}{count}r{repeat}", pools[scenario], count)
                        target = Target(scenario, target_node, "jsonrpc", "/")
                        result = run_wrk(
                            target, scenario, count, args.seconds, work,
                            stored=0, total=0, repeat=repeat, lua_text=text,
                        )  # fmt: skip
                        results.append(result)
                        flag = "" if result.valid else f"  INVALID {result.sample}"
                        print(
                            f"repeat {repeat} {scenario:5} c={count:<2} {result.rps:7.0f} req/s"
                            f"  p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:6.2f} ms"
                            f" (wrk {result.wrk_p99_ms:6.2f})"
                            f"  cpu {result.cpu_us:5.0f} us/req{flag}",
                            flush=True,
                        )
        finally:
            b.stop()
            a.stop()
    print(f"\nmedians over {args.repeat} repeats (load at end {load()}):")
    for count in connections:
        for scenario in ("other", "same"):
            runs = [r for r in results if r.scenario == scenario and r.connections == count]
            rps = statistics.median(r.rps for r in runs)
            p50 = statistics.median(r.p50_ms for r in runs)
            p99 = statistics.median(r.p99_ms for r in runs)
            wrk_p99 = statistics.median(r.wrk_p99_ms for r in runs)
            valid = "" if all(r.valid for r in runs) else "  INVALID"
            print(f"  {scenario:5} c={count:<2} {rps:7.0f} req/s  p50 {p50:6.2f} ms"
                  f"  p99 {p99:6.2f} ms (wrk {wrk_p99:6.2f}){valid}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1))


if __name__ == "__main__":
    main()
