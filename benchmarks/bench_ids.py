"""What the shape of task ids costs the SQLite store (run by hand).

Writes tasks the way the engine writes an echo task (one append: the creation and the agent's
three moves, four events) from N concurrent coroutines through ``SqliteStore``, with task and
context ids either random (UUID version 4) or time-ordered (version 7, what the engine makes).
Random ids put each new task on its own page of every id-keyed index; ordered ids put the
tasks of one group commit side by side. Rounds alternate between the two on fresh files.

    .venv/bin/python benchmarks/bench_ids.py --dir /var/tmp    # --tasks 6000 --rounds 3
                                                              # --concurrency 8 32

Per run: tasks/s, CPU µs per task of the event loop thread and of the writer thread, tasks
per commit, and bytes the process wrote per task (``wchar`` of /proc/self/io: the WAL frames,
two ``pwrite`` calls per changed page, and any temporary files).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from bench_store import _writer_cpu  # (this folder: run as a script)

from accord.core._limits import Limits
from accord.core.agent import move, update_artifact
from accord.core.client import send_message
from accord.engine._engine import _new_id as time_ordered_id
from accord.store._sqlite import SqliteStore
from accord.wire._model import Artifact, Message, Part, Role, SendMessageRequest

TENANT = "bench"
SHAPES: dict[str, Callable[[], str]] = {
    "random (v4)": lambda: str(uuid.uuid4()),
    "time-ordered (v7)": time_ordered_id,
}


async def _one_task(store: SqliteStore, index: int, new_id: Callable[[], str]) -> None:
    now = time.time_ns() // 1_000_000
    request = SendMessageRequest(
        message=Message(message_id=f"m-{index}", role=Role.USER, parts=[Part(text=f"hi {index}")])
    )
    outcome = send_message(
        request,
        tenant=TENANT,
        task=None,
        tenant_task_count=0,
        now_ms=now,
        new_task_id=new_id(),
        new_context_id=new_id(),
        limits=Limits(),
    )
    events = list(outcome.events)
    record = outcome.record
    for step in ("work", "artifact", "complete"):
        assert record is not None
        if step == "artifact":
            artifact = Artifact(artifact_id="echo", parts=[Part(text=f"echo: hi {index}")])
            outcome = update_artifact(record, artifact, now, last_chunk=True)
        else:
            outcome = move(record, step, now)
        events += outcome.events
        record = outcome.record
    assert record is not None
    await store.append(record, events, 0)


def _written_bytes() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


async def _run(directory: str, shape: str, tasks: int, concurrency: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(dir=directory) as folder:
        store = SqliteStore(str(Path(folder) / "ids.db"))
        await store.open()
        new_id = SHAPES[shape]
        for index in range(200):  # warm up: statement cache, first pages
            await _one_task(store, index, new_id)
        indexes = iter(range(200, 200 + tasks))

        async def worker() -> None:
            for index in indexes:
                await _one_task(store, index, new_id)

        before = store.commit_stats
        wrote, loop_cpu, writer_cpu = _written_bytes(), time.thread_time(), _writer_cpu(store)
        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        seconds = time.perf_counter() - start
        loop_cpu = time.thread_time() - loop_cpu
        writer_cpu = _writer_cpu(store) - writer_cpu
        wrote = _written_bytes() - wrote
        after = store.commit_stats
        await store.close()
    return {
        "tasks/s": tasks / seconds,
        "loop µs/task": loop_cpu / tasks * 1e6,
        "writer µs/task": writer_cpu / tasks * 1e6,
        "tasks/commit": (after.writes - before.writes) / max(after.commits - before.commits, 1),
        "KiB written/task": wrote / tasks / 1024,
    }


async def main(args: argparse.Namespace) -> None:
    columns = ["tasks/s", "loop µs/task", "writer µs/task", "tasks/commit", "KiB written/task"]
    results: dict[tuple[int, str], list[dict[str, float]]] = {}
    for concurrency in args.concurrency:
        for round_ in range(args.rounds):
            order = list(SHAPES) if round_ % 2 == 0 else list(reversed(SHAPES))
            for shape in order:
                result = await _run(args.dir, shape, args.tasks, concurrency)
                results.setdefault((concurrency, shape), []).append(result)
                print(
                    f"  c{concurrency} round {round_ + 1} {shape:18} "
                    + "  ".join(f"{name} {result[name]:,.1f}" for name in columns),
                    flush=True,
                )
    print()
    print("| writers | ids | " + " | ".join(columns) + " |")
    print("|---:|---|" + "---:|" * len(columns))
    for (concurrency, shape), runs in results.items():
        medians = [statistics.median(run[name] for run in runs) for name in columns]
        print(f"| {concurrency} | {shape} | " + " | ".join(f"{m:,.1f}" for m in medians) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=".", help="where the database files go (a real disk)")
    parser.add_argument("--tasks", type=int, default=6000, help="tasks per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    asyncio.run(main(parser.parse_args()))
