"""The CPU of a continued harness turn in process, no HTTP: the engine and the harness on SQLite
(FULL, a temporary directory), the scripted model of benchmarks/harness_turns.py; ``--convs``
conversations started, then ``--turns`` messages continuing them, ``--concurrency`` at a time
(each batch continues different conversations). Prints CPU and wall µs a turn; ``--profile
FILE`` writes a cProfile of the continued turns (read it with benchmarks/profile_summary.py
or pstats).

    python3 benchmarks/harness_turn_cpu.py --convs 300 --turns 2400 --concurrency 8
    python3 benchmarks/harness_turn_cpu.py --profile /tmp/turn.prof
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import tempfile
import time
import uuid
from pathlib import Path

from accord.core._caller import Caller
from accord.engine import Engine
from accord.harness import HarnessAgent, HarnessSettings
from accord.store._sqlite import SqliteStore
from accord.wire._model import Message, Part, Role, SendMessageRequest, Task, TaskState

CALLER = Caller(participant="bench")
SCRIPT = [{"text": "ok"}]  # as benchmarks/harness_turns.py: one answer, then "(script exhausted)"


def request(text: str, task_id: str = "") -> SendMessageRequest:
    message = Message(
        message_id=f"m-{uuid.uuid4().hex}", role=Role.USER, parts=[Part(text=text)], task_id=task_id
    )
    return SendMessageRequest(message=message)


async def send(engine: Engine, text: str, task_id: str = "") -> Task:
    result = await engine.send_message(request(text, task_id), CALLER)
    if not isinstance(result, Task) or result.status.state is not TaskState.INPUT_REQUIRED:
        raise SystemExit(f"unexpected answer: {result!r}")
    return result


async def measure(work: Path, args: argparse.Namespace) -> tuple[float, float]:
    script = work / "script.json"
    script.write_text(json.dumps(SCRIPT))
    agent = HarnessAgent(HarnessSettings(model=f"scripted:{script}"))
    agent.check_models()
    engine = Engine(SqliteStore(str(work / "tasks.db")), agent)
    agent.attach_engine(engine)
    await engine.start()
    try:
        tasks = [(await send(engine, "hello")).id for _ in range(args.convs)]
        await asyncio.sleep(0.2)  # (the first turns' runs end)
        profiler = cProfile.Profile() if args.profile else None
        cpu, wall = time.process_time(), time.perf_counter()
        if profiler is not None:
            profiler.enable()
        for start in range(0, args.turns, args.concurrency):
            batch = range(start, min(start + args.concurrency, args.turns))
            await asyncio.gather(*(send(engine, f"turn {n}", tasks[n % len(tasks)]) for n in batch))
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile)
        return time.process_time() - cpu, time.perf_counter() - wall
    finally:
        await engine.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--convs", type=int, default=300)
    parser.add_argument("--turns", type=int, default=2400)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--profile", help="write a cProfile of the continued turns here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        cpu, wall = asyncio.run(measure(Path(work), args))
    per = 1e6 / args.turns
    print(f"{args.turns} turns: CPU {cpu * per:.0f} µs a turn, wall {wall * per:.0f} µs a turn")


if __name__ == "__main__":
    main()
