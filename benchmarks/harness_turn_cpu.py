"""The CPU of a continued harness turn in process, no HTTP to the client: the engine and the
harness on SQLite (FULL, a temporary directory), the scripted model of
benchmarks/harness_turns.py; ``--convs`` conversations started, then ``--turns`` messages
continuing them, ``--concurrency`` at a time (each batch continues different conversations).
Prints CPU and wall µs a turn; ``--profile FILE`` writes a cProfile of the continued turns
(read it with benchmarks/profile_summary.py or pstats).

``--model openai``: the model is benchmarks/fake_rate_model.py in its own process (an
OpenAI-compatible server over real HTTP, streamed, answering ``ok`` at once), the harness's
OpenAI adapter calling it through ``--client`` (accord's own HTTP client, the default, or
the openai package's); its CPU is not counted (nor traced by valgrind).

``--render N``: no turns; the transcript of one running conversation of ``--history``
messages, as a turn reads it (``_transcript.entries``), rendered N times (``--general``: on
the general path, as before the plain path).

    python3 benchmarks/harness_turn_cpu.py --convs 300 --turns 2400 --concurrency 8
    python3 benchmarks/harness_turn_cpu.py --model openai --convs 200 --turns 1200
    python3 benchmarks/harness_turn_cpu.py --model openai --client package --turns 1200
    python3 benchmarks/harness_turn_cpu.py --profile /tmp/turn.prof
    python3 benchmarks/harness_turn_cpu.py --render 5000 --history 22
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import tempfile
import time
import uuid
from pathlib import Path

from run import fake_model

from accord.core._caller import Caller
from accord.engine import Engine
from accord.harness import HarnessAgent, HarnessSettings
from accord.harness import _transcript as transcript
from accord.harness.models._endpoint import Client, Endpoint
from accord.store._sqlite import SqliteStore
from accord.wire._model import Message, Part, Role, SendMessageRequest, Task, TaskState, TaskStatus

HERE = Path(__file__).resolve().parent
CALLER = Caller(participant="bench")
SCRIPT = [{"text": "ok"}]  # as benchmarks/harness_turns.py: one answer, then "(script exhausted)"
FIRST = "instant hello"  # (fake_rate_model.py answers a conversation starting so at once)


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


def settings(
    work: Path, model: str, stack: contextlib.ExitStack, client: Client = "accord"
) -> HarnessSettings:
    if model == "openai":
        base_url, _ = stack.enter_context(fake_model(work))
        endpoint = Endpoint(base_url=base_url, client=client)
        return HarnessSettings(model="openai:bench", openai=endpoint)
    script = work / "script.json"
    script.write_text(json.dumps(SCRIPT))
    return HarnessSettings(model=f"scripted:{script}")


async def measure(
    work: Path, args: argparse.Namespace, chosen: HarnessSettings
) -> tuple[float, float]:
    agent = HarnessAgent(chosen)
    agent.check_models()
    engine = Engine(SqliteStore(str(work / "tasks.db")), agent)
    agent.attach_engine(engine)
    await engine.start()
    try:
        tasks = [(await send(engine, FIRST)).id for _ in range(args.convs)]
        await asyncio.sleep(0.2)  # (the first turns' runs end)
        profiler = cProfile.Profile(time.thread_time) if args.profile else None
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


def running(messages: int) -> Task:
    """A running turn's task as the benchmark's conversations store it: the participant's
    messages (owed their turn when they came) and the model's answers, in turn."""
    history = []
    for index in range(messages):
        if index % 2 == 0:
            metadata = {"participant_id": "bench", "accord.harness/owed": "turn"}
            role, text = Role.USER, f"turn {index // 2}"
        else:
            metadata = {"accord.harness/model_call": index // 2, "accord.core/after": index}
            role, text = Role.AGENT, "ok"
        history.append(
            Message(
                message_id=f"m-{index}",
                role=role,
                parts=[Part(text=text)],
                task_id="t",
                metadata=metadata,
            )
        )
    return Task(id="t", context_id="c", status=TaskStatus(state=TaskState.WORKING), history=history)


def render(args: argparse.Namespace) -> None:
    task = running(args.history)
    options = {"plain": False} if args.general else {}  # (main's entries has no plain)
    found = transcript.entries(task, "accord", **options)
    assert len(found) == args.history, found
    cpu = time.process_time()
    for _ in range(args.render):
        transcript.entries(task, "accord", **options)
    cpu = time.process_time() - cpu
    path = "general" if args.general else "default"
    print(f"{args.render} renders of {args.history} messages ({path} path): "
          f"CPU {cpu * 1e6 / args.render:.1f} µs a render")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--convs", type=int, default=300)
    parser.add_argument("--turns", type=int, default=2400)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--model", choices=("scripted", "openai"), default="scripted")
    parser.add_argument(
        "--client", choices=("accord", "package"), default="accord", help="(--model openai)"
    )
    parser.add_argument("--profile", help="write a cProfile of the continued turns here")
    parser.add_argument("--render", type=int, help="render a transcript this many times")
    parser.add_argument("--history", type=int, default=22, help="its messages (--render)")
    parser.add_argument("--general", action="store_true", help="on the general path (--render)")
    args = parser.parse_args()
    if args.render is not None:
        render(args)
        return
    with tempfile.TemporaryDirectory() as work, contextlib.ExitStack() as stack:
        chosen = settings(Path(work), args.model, stack, args.client)
        cpu, wall = asyncio.run(measure(Path(work), args, chosen))
    per = 1e6 / args.turns
    print(f"{args.turns} turns ({args.model}): CPU {cpu * per:.0f} µs a turn, "
          f"wall {wall * per:.0f} µs a turn")  # fmt: skip


if __name__ == "__main__":
    main()
