"""What the harness's step events (docs/harness.md, "Visible work") add to a turn with two
tool calls, in one process on SQLite, rounds with them off and on interleaved in one run.

    python3 benchmarks/harness_step_events.py            # --turns 200 --rounds 5

Each turn: a model call that asks for two tools (one step), both run, a model call that
answers; with events on, that is three step events more (the model call, two tool calls).
Reports p50/p99 of a turn, off and on, and their ratio (target: at most 1.05 at p50).
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


async def main(turns: int, rounds: int) -> None:
    agent = HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(model)})
    agent.extra_tools.append(FunctionTool(lookup))
    times: dict[str, list[float]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory() as folder:
        engine = Engine(SqliteStore(str(Path(folder) / "tasks.db")), agent)
        async with engine:
            for _ in range(rounds):
                for mode in ("off", "on"):
                    os.environ[OFF_ENV] = "0" if mode == "off" else "1"
                    for _ in range(turns):
                        began = time.perf_counter()
                        await engine.send_message(request("where are 1 and 2?"), ALICE)
                        times[mode].append((time.perf_counter() - began) * 1000)
    p50 = {m: statistics.median(v) for m, v in times.items()}
    p99 = {m: statistics.quantiles(v, n=100)[98] for m, v in times.items()}
    for mode in ("off", "on"):
        print(f"{mode:4} turns {len(times[mode])}  p50 {p50[mode]:.3f} ms  p99 {p99[mode]:.3f} ms")
    print(f"on/off p50 {p50['on'] / p50['off']:.3f}  p99 {p99['on'] / p99['off']:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.rounds))
