"""A conversation turn against an echo SendMessage, in one run, both on SQLite; and what
hooks cost a turn.

    python3 benchmarks/harness_turns.py           # --seconds 5 --repeat 3 --connections 1,8
    python3 benchmarks/harness_turns.py --baseline /path/to/an/older/checkout
    python3 benchmarks/harness_turns.py --pg postgresql://postgres@127.0.0.1:5432/postgres

Servers (accord's own HTTP front, SQLite in a temporary directory, JSON-RPC):

- ``accord serve --agent echo``: each request a blocking SendMessage that creates a task,
  works, adds the echo artifact and completes it;
- ``accord serve --agent harness`` with a scripted model: ``first``, each request starts a new
  conversation (intake, the task extension, one model call, parked in INPUT_REQUIRED with its
  sub-state); ``turn``, each request continues one of 2,000 conversations made beforehand
  (taken in turn, so concurrent requests continue different ones);
- ``hooked``: ``turn`` with a plugin whose one hook, a Python function that does nothing, runs
  on every phase of every operation a turn has (message.received, turn.started,
  turn.finished, task.state_changed): what using hooks costs;
- ``baseline`` (with ``--baseline DIR``): ``turn`` served from the checkout at DIR (its
  ``src`` first on the path), e.g. one without hooks, to show that unused hooks cost a turn
  nothing.

With ``--pg ADMIN_DSN`` every server runs on a fresh PostgreSQL database of that server
(created before it starts, dropped after) instead of SQLite: one node, as a store several
nodes share.

Every response body is checked (the echo's COMPLETED task; the harness's
``awaiting-next-message``). The targets (issue: harness part 1): a turn adds at most 1 ms p50
over the echo at 1 connection, and keeps at least half the echo's throughput at 8 (issue:
harness part 2): a turn with hooks unused is the baseline's, within the noise.
Results go to docs/benchmarks.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import urllib.request
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lua import _COMMON, _HEADERS, header  # noqa: E402
from run import Result, Server, Target, free_port, load, machine, parse_in_venv, run_wrk  # noqa: E402

POOL = 2_000
PARTICIPANT = "bench"
SCRIPT = [{"text": "ok"}]  # one answer; later calls get "(script exhausted)"

_NEW_MESSAGE = (
    r"""'{"jsonrpc":"2.0","id":' .. counter .. ',"method":"SendMessage","params":{"message":"""
    r"""{"messageId":"m-' .. RUN .. '-' .. counter .. '","role":"ROLE_USER","""
    r""""parts":[{"text":"hello ' .. counter .. '"}]""" + "{task}" + r"""}}}'"""
)


def lua(scenario: str, run: str, pool: list[str], connections: int) -> str:
    """The wrk script of a scenario (echo, first or turn) for wrk's ``-c connections``."""
    task = ""
    ids = ""
    if scenario == "turn":
        ids = "IDS = {" + ",".join(f'"{i}"' for i in pool) + "}\n"
        task = r""","taskId":"' .. IDS[counter % #IDS + 1] .. '\""""
    body = _NEW_MESSAGE.replace("{task}", task)
    check = (
        "status == 200 and has(body, 'TASK_STATE_COMPLETED') and has(body, 'echo: hello ')"
        if scenario == "echo"
        else "status == 200 and has(body, 'TASK_STATE_INPUT_REQUIRED')"
        " and has(body, 'awaiting-next-message') and not has(body, '\"error\"')"
    )
    return "\n".join(
        [
            header(run, connections),
            ids,
            _COMMON,
            _HEADERS,
            f'wrk.headers["X-Participant-Id"] = "{PARTICIPANT}"',
            "request = function()\n  counter = counter + 1\n"
            f"  local body = {body}\n"
            '  return wrk.format("POST", wrk.path, nil, body)\nend',
            "response = function(status, headers, body)",
            f"  if not ({check}) then fail(status, body) end",
            "end",
        ]
    )


def start_conversations(port: int, count: int) -> list[str]:
    ids = []
    for n in range(count):
        body = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "SendMessage",
            "params": {
                "message": {
                    "messageId": uuid.uuid4().hex,
                    "role": "ROLE_USER",
                    "parts": [{"text": "hi"}],
                }
            },
        }
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/",
            data=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                "A2A-Version": "1.0",
                "X-Participant-Id": PARTICIPANT,
            },
        )
        with urllib.request.urlopen(request) as answer:
            ids.append(json.load(answer)["result"]["task"]["id"])
    return ids


NOOP_HOOK = "def noop(point, context):\n    return None\n"
TURN_OPERATIONS = ("message.received", "turn.started", "turn.finished", "task.state_changed")


def hooked_plugin(work: Path) -> Path:
    """A plugin whose one hook does nothing on every phase of a turn's operations."""
    root = work / "noop-plugin"
    namespace = root / "io.github.madarauchiha-314.tiny-harness"
    namespace.mkdir(parents=True)
    (work / "accord_bench_noop.py").write_text(NOOP_HOOK)
    (root / "plugin.json").write_text(json.dumps({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "noop",
    }))  # fmt: skip
    points = [f"{op}.{phase}" for op in TURN_OPERATIONS for phase in ("pre", "in", "post")]
    hook = {"name": "noop", "points": points, "import_path": "accord_bench_noop:noop"}
    (namespace / "hooks.json").write_text(json.dumps({"hooks": [hook]}))
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--connections", default="1,8")
    parser.add_argument("--scenarios", default="echo,first,turn,hooked")
    parser.add_argument("--baseline", type=Path, help="also serve turn from this checkout")
    parser.add_argument("--pg", help="an admin DSN: each server on a fresh database there")
    args = parse_in_venv(parser, __file__)
    connections = [int(c) for c in args.connections.split(",")]
    scenarios = args.scenarios.split(",") + (["baseline"] if args.baseline else [])
    accord = str(Path(sys.executable).with_name("accord"))
    if args.pg:
        sys.path.insert(0, str(HERE.parent))  # (bench_scaleout's cluster reads tests/)
        from bench_scaleout import fresh_database
    results: list[Result] = []
    print(f"machine: {machine()}  load: {load()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        script = work / "script.json"
        script.write_text(json.dumps(SCRIPT))
        config = work / "harness.toml"
        config.write_text(f'[harness]\nmodel = "scripted:{script}"\n')
        hooked = work / "hooked.toml"
        plugins = json.dumps([str(hooked_plugin(work))])
        hooked.write_text(f'[harness]\nmodel = "scripted:{script}"\nplugins = {plugins}\n')
        for repeat in range(args.repeat):
            for scenario in scenarios:
                for count in connections:
                    port = free_port()
                    store = f"sqlite:///{work / f'{scenario}-{count}-{repeat}.db'}"
                    database = contextlib.ExitStack()
                    if args.pg:
                        store = database.enter_context(fresh_database(args.pg))
                    argv = [accord, "serve", "--port", str(port), "--store", store]
                    argv += ["--log-level", "warning"]
                    env = dict(os.environ)
                    if scenario == "echo":
                        argv += ["--agent", "echo"]
                    else:
                        chosen = hooked if scenario == "hooked" else config
                        argv += ["--agent", "harness", "--config", str(chosen)]
                    if scenario == "hooked":
                        env["PYTHONPATH"] = str(work)  # the hook's module
                    if scenario == "baseline":
                        env["PYTHONPATH"] = str(args.baseline.resolve() / "src")
                    server = Server(scenario, argv, port, "/.well-known/agent-card.json",
                                    work / f"{scenario}.log", env=env)  # fmt: skip
                    server.start()
                    try:
                        kind = "turn" if scenario in ("hooked", "baseline") else scenario
                        pool = start_conversations(port, POOL) if kind == "turn" else []
                        target = Target(scenario, server, "jsonrpc", "/")
                        text = lua(kind, f"{scenario}{count}r{repeat}", pool, count)
                        result = run_wrk(
                            target, scenario, count, args.seconds, work,
                            stored=0, total=0, repeat=repeat, lua_text=text,
                        )  # fmt: skip
                    finally:
                        server.stop()
                        database.close()  # (with --pg: dropped)
                    results.append(result)
                    flag = "" if result.valid else f"  INVALID {result.bad} bad: {result.sample}"
                    print(
                        f"repeat {repeat} {scenario:8} c={count:<2} {result.rps:8.0f} req/s"
                        f"  p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:6.2f} ms"
                        f" (wrk {result.wrk_p99_ms:6.2f})  cpu {result.cpu_us:6.0f} us/req{flag}",
                        flush=True,
                    )
    print("\nmedians over repeats (req/s, p50 ms, p99 ms as recorded (wrk's), cpu us/req):")
    table: dict[tuple[str, int], tuple[float, float]] = {}
    for scenario in scenarios:
        for count in connections:
            runs = [r for r in results if r.scenario == scenario and r.connections == count]
            rps = statistics.median(r.rps for r in runs)
            p50 = statistics.median(r.p50_ms for r in runs)
            p99 = statistics.median(r.p99_ms for r in runs)
            wrk_p99 = statistics.median(r.wrk_p99_ms for r in runs)
            cpu = statistics.median(r.cpu_us for r in runs)
            table[(scenario, count)] = (rps, p50)
            shown = f"{rps:8.0f} req/s  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms (wrk {wrk_p99:6.2f})"
            shown += f"  cpu {cpu:5.0f}"
            print(f"  {scenario:8} c={count:<2} {shown}", flush=True)
    print("\ntargets:")
    for scenario in ("first", "turn"):
        if scenario not in scenarios or "echo" not in scenarios:
            continue
        if 1 in connections:
            added = table[(scenario, 1)][1] - table[("echo", 1)][1]
            print(f"  {scenario}: p50 at 1 connection {added:+.2f} ms over echo (target <= +1 ms)")
        if 8 in connections:
            ratio = table[(scenario, 8)][0] / table[("echo", 8)][0]
            print(f"  {scenario}: throughput at 8 connections {ratio:.0%} of echo (target >= 50%)")
    for other in ("baseline", "hooked"):
        if other in scenarios and "turn" in scenarios:
            for count in connections:
                ratio = table[("turn", count)][0] / table[(other, count)][0]
                print(f"  turn (hooks unused) at {count}: {ratio:.0%} of {other}'s throughput")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1))


if __name__ == "__main__":
    main()
