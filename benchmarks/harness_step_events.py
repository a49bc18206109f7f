"""What the harness's step events (docs/harness.md, "Visible work") add to a turn with two
tool calls, in one process on SQLite, rounds with them off and on interleaved in one run.

    python3 benchmarks/harness_step_events.py            # --turns 5 --rounds 200

Each turn: a model call that asks for two tools (one step), both run, a model call that
answers; with events on, that is three step events more (the model call, two tool calls).
Rounds go off, on, on, off, ... (each pair in both orders, so that a drift of the machine's
load weighs on both alike), after one warm-up round of each that is not counted. Reports, off
and on, p50/p99 of a turn's time and the p50 of its CPU time (every thread of the process:
the event loop and SQLite's writer), and their on/off ratios (target: at most 1.05 at p50);
the on/off ratio of the p50s of each pair of neighbouring rounds (their median and range:
a measure the machine's drift moves less); and the store's commits per turn (the events ride
in the commits a turn makes anyway).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from accord.core import Caller
from accord.engine import Engine
from accord.harness import HarnessAgent, HarnessSettings, ModelResponse, ToolCall
from accord.harness._step_events import OFF_ENV
from accord.harness.models import FunctionModel, Usage
from accord.harness.tools import FunctionTool
from accord.store import SqliteStore
from accord.wire import Message, Part, Role, SendMessageRequest

ALICE = Caller(participant="alice")
MODES = ("off", "on")


async def lookup(order_id: int) -> str:
    return f"order {order_id}: shipped"


async def model(conversation: object) -> ModelResponse:
    steps = getattr(conversation, "steps", ())
    if steps:
        return ModelResponse("both shipped", usage=Usage(50, 5, 0))
    calls = (ToolCall("lookup", {"order_id": 1}), ToolCall("lookup", {"order_id": 2}))
    return ModelResponse("", calls, usage=Usage(100, 10, 0))


def request(text: str, task_id: str = "") -> SendMessageRequest:
    message = Message(
        message_id=os.urandom(8).hex(), role=Role.USER, parts=[Part(text=text)], task_id=task_id
    )
    if not task_id:
        brief = {"kind": "task", "payload": {"name": "n", "goal": "g"}}
        message.parts.append(Part(data=brief, media_type="application/vnd.tiny-harness.event+json"))
    return SendMessageRequest(message=message)


def order(rounds: int) -> list[str]:
    """The modes of ``rounds`` counted rounds: off, on, on, off, off, on, ..."""
    pairs = [MODES if n % 2 == 0 else MODES[::-1] for n in range(rounds)]
    return [mode for pair in pairs for mode in pair]


async def main(turns: int, rounds: int) -> None:
    agent = HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(model)})
    agent.extra_tools.append(FunctionTool(lookup))
    times: dict[str, list[float]] = {m: [] for m in MODES}
    cpu: dict[str, list[float]] = {m: [] for m in MODES}
    commits: dict[str, list[int]] = {m: [] for m in MODES}
    pairs: list[dict[str, float]] = []  # each pair of neighbouring rounds: p50 by mode
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteStore(str(Path(folder) / "tasks.db"))
        engine = Engine(store, agent)
        async with engine:
            for counted, mode in [(False, m) for m in MODES] + [(True, m) for m in order(rounds)]:
                os.environ[OFF_ENV] = "0" if mode == "off" else "1"
                round_times: list[float] = []
                for _ in range(turns):
                    committed = store.commit_stats.commits
                    began, began_cpu = time.perf_counter(), time.process_time()
                    await engine.send_message(request("where are 1 and 2?"), ALICE)
                    took, took_cpu = time.perf_counter() - began, time.process_time() - began_cpu
                    round_times.append(took * 1000)
                    if counted:
                        times[mode].append(took * 1000)
                        cpu[mode].append(took_cpu * 1000)
                        commits[mode].append(store.commit_stats.commits - committed)
                if counted:
                    if not pairs or len(pairs[-1]) == len(MODES):
                        pairs.append({})
                    pairs[-1][mode] = statistics.median(round_times)
    p50 = {m: statistics.median(v) for m, v in times.items()}
    p99 = {m: statistics.quantiles(v, n=100)[98] for m, v in times.items()}
    c50 = {m: statistics.median(v) for m, v in cpu.items()}
    for m in MODES:
        print(
            f"{m:4} turns {len(times[m])}  p50 {p50[m]:.3f} ms  p99 {p99[m]:.3f} ms  "
            f"cpu p50 {c50[m]:.3f} ms  commits/turn {statistics.mean(commits[m]):.2f}"
        )
    by_pair = sorted(pair["on"] / pair["off"] for pair in pairs)
    print(
        f"on/off p50 {p50['on'] / p50['off']:.3f}  p99 {p99['on'] / p99['off']:.3f}  "
        f"cpu p50 {c50['on'] / c50['off']:.3f}  p50 by pair of rounds: median "
        f"{statistics.median(by_pair):.3f} ({by_pair[0]:.3f}-{by_pair[-1]:.3f})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=5, help="turns per round")
    parser.add_argument("--rounds", type=int, default=200, help="counted rounds of each mode")
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.rounds))
