"""What hooks cost a conversation turn, in-process (no HTTP, no disk: the engine on the
in-memory store), so that microseconds show.

    python3 benchmarks/harness_hooks.py --baseline /path/to/a/checkout/without/hooks

Each measurement is a fresh Python process running ``--turns`` turns (each a blocking
SendMessage continuing one of 200 parked conversations, in turn) and printing the
microseconds per turn. Variants, interleaved over ``--repeat`` rounds:

- ``unused``: this checkout, no hook registered (every operation skipped);
- ``baseline``: the checkout at ``--baseline`` (its ``src`` first on the path), e.g. the
  harness before hooks existed;
- ``hooked``: this checkout with one Python hook that does nothing, on every phase of every
  operation a turn has (message.received, turn.started, turn.finished, task.state_changed).

The claim it checks (issue: harness part 2): hooks cost a turn nothing when unused —
``unused`` is ``baseline`` within the rounds' spread. Results go to docs/benchmarks.md.

First it times the dispatch itself with no hook registered: what the harness does at each
operation before deciding to skip it (``Hooks.wants`` on a frozen, empty registry), per
call, over every operation of the catalogue.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

CHILD = r"""
import asyncio, sys, time
from accord.core._caller import Caller
from accord.engine import Engine
from accord.harness import HarnessAgent, HarnessSettings
from accord.harness.models import FunctionModel
from accord.store._memory import MemoryStore
from accord.wire._model import Message, Part, Role, SendMessageRequest

TURNS, HOOKED = int(sys.argv[1]), sys.argv[2] == "hooked"
CONVERSATIONS = 200


def message(text, number, task_id=""):
    return SendMessageRequest(message=Message(
        message_id=f"m{number}", role=Role.USER, parts=[Part(text=text)], task_id=task_id))


async def main():
    agent = HarnessAgent(HarnessSettings(model="m"), {"m": FunctionModel(lambda c: "ok")})
    if HOOKED:
        from accord.harness.hooks import FunctionExecutor
        operations = ("message.received", "turn.started", "turn.finished", "task.state_changed")
        points = [f"{o}.{p}" for o in operations for p in ("pre", "in", "post")]
        agent.hooks.register(FunctionExecutor("noop", lambda point, context: None, points=points))
    engine = Engine(MemoryStore(), agent)
    if hasattr(agent, "attach_engine"):  # (as accord serve attaches it)
        agent.attach_engine(engine)
    await engine.start()
    alice = Caller(participant="alice")
    ids = [(await engine.send_message(message("hi", n), alice)).id for n in range(CONVERSATIONS)]
    for n in range(TURNS // 10):  # warm up
        await engine.send_message(message("again", -n - 1, ids[n % CONVERSATIONS]), alice)
    started = time.perf_counter()
    for n in range(TURNS):
        task_id = ids[n % CONVERSATIONS]
        await engine.send_message(message("hello", CONVERSATIONS + n, task_id), alice)
    elapsed = time.perf_counter() - started
    await engine.stop()
    print(elapsed / TURNS * 1e6)


asyncio.run(main())
"""


def dispatch_ns(calls: int = 200_000) -> tuple[float, int]:
    """Nanoseconds per ``Hooks.wants`` on a frozen registry with no hook, best of 5, and the
    number of operations in the catalogue it was asked about."""
    import timeit

    import accord.harness  # noqa: F401  (registers the catalogue's operations)
    from accord.harness.hooks._operations import OPERATIONS
    from accord.harness.hooks._registry import Hooks

    hooks = Hooks()
    hooks.freeze()
    operations = list(OPERATIONS.values())
    per_round = calls // len(operations)

    def ask() -> None:
        for _ in range(per_round):
            for operation in operations:
                hooks.wants(operation)

    best = min(timeit.repeat(ask, number=1, repeat=5))
    return best / (per_round * len(operations)) * 1e9, len(operations)


def measure(variant: str, turns: int, baseline: Path | None) -> float:
    env = dict(os.environ)
    source = baseline / "src" if variant == "baseline" and baseline else REPO / "src"
    env["PYTHONPATH"] = str(source)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(turns), variant],
        capture_output=True, text=True, check=True, env=env, cwd=REPO,
    )  # fmt: skip
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--baseline", type=Path, help="a checkout to compare with")
    args = parser.parse_args()
    variants = ["unused", "hooked"] + (["baseline"] if args.baseline else [])
    times: dict[str, list[float]] = {variant: [] for variant in variants}
    print(f"load: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}", flush=True)
    ns, count = dispatch_ns()
    print(f"dispatch with no hook: {ns:.0f} ns per operation skipped ({count} operations)")
    for round_ in range(args.repeat):
        for variant in variants:
            times[variant].append(measure(variant, args.turns, args.baseline))
        line = "  ".join(f"{v} {times[v][-1]:6.1f}" for v in variants)
        print(f"round {round_}: us/turn  {line}", flush=True)
    print("\nmedian us/turn (min - max):")
    for variant in variants:
        values = times[variant]
        print(f"  {variant:8} {statistics.median(values):6.1f}  ({min(values):.1f} - "
              f"{max(values):.1f})")  # fmt: skip
    if args.baseline:
        unused, base = statistics.median(times["unused"]), statistics.median(times["baseline"])
        print(f"\nunused - baseline: {unused - base:+.1f} us/turn ({unused / base - 1:+.1%})")
    hooked = statistics.median(times["hooked"])
    print(f"hooked - unused: {hooked - statistics.median(times['unused']):+.1f} us/turn")


if __name__ == "__main__":
    main()
