"""Store benchmark (run by hand): SQLite write throughput with group commit, GetTask reads,
ListTasks latency at two sizes and process memory at two sizes.

    .venv/bin/python benchmarks/bench_store.py [--small 1000] [--big 100000] [--tasks 20000]
        [--repeat 5] [--concurrency 256] [--dir DIR] [--switch-interval S]

A "task" is what one SendMessage that the agent completes writes: created by the client's
message (SendMessage -> 1 event), then StartWorking, UpdateArtifact and CompleteTask (3
further events). Records are built with the real core commands. Two ways to write it:

- ``4 appends``: one store append per command (what an engine committing every event
  separately does);
- ``2 appends``: the creation, then one append carrying the three agent events.

Each size gets its own database file (in a temporary directory on the working directory's
disk). Memory is measured in a fresh subprocess per size that opens the finished file, reads
and writes through it, and reports its resident set.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from accord.core._limits import Limits
from accord.core._records import TaskRecord
from accord.core.agent import move, update_artifact
from accord.core.client import send_message
from accord.core.views import TaskQuery
from accord.store._rows import task_record as _task_record
from accord.store._sqlite import SqliteStore
from accord.wire._model import Artifact, Message, Part, Role, SendMessageRequest, TaskState

TENANT = "bench"
_GET_SCOPED = (
    "SELECT tenant, seq, created_ms, updated_ms, snapshot FROM tasks WHERE id = ? AND tenant = ?"
)
LIMITS = Limits()


# --- writing tasks -------------------------------------------------------------------------


def _message(index: int) -> SendMessageRequest:
    text = f"please summarise document {index} in three sentences"
    return SendMessageRequest(
        message=Message(message_id=f"m-{index}", role=Role.USER, parts=[Part(text=text)])
    )


async def _one_task(store: SqliteStore, index: int, batched: bool, clock: list[int]) -> None:
    now = clock[0] = clock[0] + 1
    created = send_message(
        _message(index),
        tenant=TENANT,
        task=None,
        tenant_task_count=0,
        now_ms=now,
        new_task_id=f"task-{index:07d}",
        new_context_id=f"ctx-{index // 10}",
        limits=LIMITS,
    )
    record = created.record
    assert record is not None
    await store.append(record, created.events, 0)
    events = []
    for step in ("work", "artifact", "complete"):
        if step == "artifact":
            artifact = Artifact(artifact_id="summary", parts=[Part(text=f"summary {index}")])
            outcome = update_artifact(record, artifact, now + 1, last_chunk=True)
        else:
            outcome = move(record, step, now + 2)
        assert outcome.record is not None
        if not batched:
            await store.append(outcome.record, outcome.events, record.seq)
        events += outcome.events
        record = outcome.record
    if batched:
        await store.append(record, events, 1)


async def _write_tasks(
    store: SqliteStore, first: int, count: int, concurrency: int, batched: bool
) -> float:
    """Seconds to write ``count`` tasks from ``concurrency`` coroutines."""
    clock = [1_700_000_000_000 + first * 4]
    next_index = iter(range(first, first + count))

    async def worker() -> None:
        for index in next_index:
            await _one_task(store, index, batched, clock)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start


# --- reading -------------------------------------------------------------------------------


async def _rate(calls: int, call: Callable[[int], Awaitable[object]]) -> float:
    start = time.perf_counter()
    for index in range(calls):
        await call(index)
    return calls / (time.perf_counter() - start)


async def _get_task_rates(store: SqliteStore, stored: int) -> tuple[float, float]:
    """GetTask/s as the store does it (on the loop thread) and with a hop to a worker thread."""
    ids = [f"task-{random.randrange(stored):07d}" for _ in range(50_000)]
    direct = await _rate(len(ids), lambda i: store.get_task(ids[i], TENANT))

    # The alternative: the query and decode on a worker thread with its own connection.
    loop = asyncio.get_running_loop()
    conn = sqlite3.connect(store.path, check_same_thread=False)

    def read(task_id: str) -> TaskRecord | None:
        rows = conn.execute(_GET_SCOPED, (task_id, TENANT)).fetchall()  # no row cache here
        return _task_record(rows[0]) if rows else None

    with ThreadPoolExecutor(1) as pool:
        hopped = await _rate(20_000, lambda i: loop.run_in_executor(pool, read, ids[i]))
    conn.close()
    return direct, hopped


async def _list_latency_ms(store: SqliteStore, query: TaskQuery, calls: int = 300) -> float:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        page = await store.list_tasks(query)
        samples.append(time.perf_counter() - start)
        assert len(page.records) == min(50, page.total_size)
    return statistics.median(samples) * 1000


LIST_QUERIES = {
    "ListTasks (no filter)": TaskQuery(tenant=TENANT, page_size=50),
    "ListTasks (status)": TaskQuery(tenant=TENANT, status=TaskState.COMPLETED, page_size=50),
    "ListTasks (contextId)": TaskQuery(tenant=TENANT, context_id="ctx-42", page_size=50),
}


# --- memory probe (runs in a fresh subprocess) ----------------------------------------------


def _rss_kib() -> tuple[int, int]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


async def _probe(path: str, stored: int) -> None:
    store = SqliteStore(path)
    await store.open()
    rng = random.Random(7)
    for _ in range(20_000):
        await store.get_task(f"task-{rng.randrange(stored):07d}", TENANT)
    for _ in range(2_000):
        await store.read_events(f"task-{rng.randrange(stored):07d}", 0)
    query = TaskQuery(tenant=TENANT, page_size=50)
    for _ in range(100):  # 100 pages deep, with totalSize
        page = await store.list_tasks(query)
        query = TaskQuery(tenant=TENANT, page_size=50, after=page.next_cursor)
    await _write_tasks(store, stored, 1_000, 32, batched=False)
    rss, peak = _rss_kib()
    await store.close()
    print(rss, peak)


def _measure_rss(path: str, stored: int) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, __file__, "--probe", path, "--probe-size", str(stored)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return int(out[0]), int(out[1])


# --- main ----------------------------------------------------------------------------------


def _writer_cpu(store: SqliteStore) -> float:
    """CPU seconds the store's writer thread has used (Linux)."""
    for thread in threading.enumerate():
        if thread.name == f"accord-sqlite-writer:{store.path}" and thread.ident is not None:
            return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    return float("nan")


async def _timed_write(
    store: SqliteStore, count: int, concurrency: int, batched: bool
) -> tuple[float, float, float]:
    """(seconds, loop thread CPU µs per task, writer thread CPU µs per task)."""
    loop_cpu, writer_cpu = time.thread_time(), _writer_cpu(store)
    seconds = await _write_tasks(store, 0, count, concurrency, batched)
    loop_cpu, writer_cpu = time.thread_time() - loop_cpu, _writer_cpu(store) - writer_cpu
    return seconds, loop_cpu / count * 1e6, writer_cpu / count * 1e6


async def _fill(
    path: str, count: int, concurrency: int
) -> tuple[SqliteStore, tuple[float, float, float]]:
    store = SqliteStore(path)
    await store.open()
    return store, await _timed_write(store, count, concurrency, batched=False)


async def main(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-store-", dir=args.dir))
    rows: list[tuple[str, str]] = []
    print(f"databases in {workdir}", file=sys.stderr)
    load_before = os.getloadavg()[0]

    # Write throughput, on fresh files, best and median of --repeat runs (the machine is
    # shared: a run's speed follows the CPU left to it).
    for batched, label in ((False, "4 appends"), (True, "2 appends")):
        runs = []
        for attempt in range(args.repeat):
            store = SqliteStore(
                str(workdir / f"writes-{label[0]}-{attempt}.db"), synchronous=args.synchronous
            )
            await store.open()
            seconds, loop_us, writer_us = await _timed_write(
                store, args.tasks, args.concurrency, batched
            )
            commits, writes, _ = store.commit_stats
            await store.close()
            runs.append((args.tasks / seconds, loop_us, writer_us, writes / commits))
        runs.sort()
        best, median = runs[-1], runs[len(runs) // 2]
        rows.append(
            (
                f"task creations/s, {label} per task ({args.tasks:,} tasks): best / median",
                f"{best[0]:,.0f} / {median[0]:,.0f}  ({best[3]:.0f} appends per commit)",
            )
        )
        rows.append(
            (
                "  CPU per task, best run: event loop thread / writer thread",
                f"{best[1]:.0f} / {best[2]:.0f} µs",
            )
        )

    # The files the reads run on.
    big_path, small_path = str(workdir / "big.db"), str(workdir / "small.db")
    big, (seconds, _, _) = await _fill(big_path, args.big, args.concurrency)
    rows.append(
        (
            f"task creations/s while filling {args.big:,} tasks (4 appends)",
            f"{args.big / seconds:,.0f}",
        )
    )

    direct, hopped = await _get_task_rates(big, args.big)
    rows.append(("GetTask/s, read on the loop thread (the store's way)", f"{direct:,.0f}"))
    rows.append(("GetTask/s, with a hop to a worker thread (rejected)", f"{hopped:,.0f}"))

    small, _ = await _fill(small_path, args.small, args.concurrency)
    for name, query in LIST_QUERIES.items():
        at_small = await _list_latency_ms(small, query)
        at_big = await _list_latency_ms(big, query)
        rows.append(
            (
                f"{name} first page, median ms: {args.small:,} / {args.big:,} tasks",
                f"{at_small:.3f} / {at_big:.3f}  (ratio {at_big / at_small:.2f})",
            )
        )
    await small.close()
    await big.close()

    rss_small, peak_small = _measure_rss(small_path, args.small)
    rss_big, peak_big = _measure_rss(big_path, args.big)
    rows.append(
        (
            f"RSS after opening and using, MiB: {args.small:,} / {args.big:,} tasks",
            f"{rss_small / 1024:.1f} / {rss_big / 1024:.1f}"
            f"  ({(rss_big / rss_small - 1) * 100:+.1f}%;"
            f" peak {peak_small / 1024:.1f} / {peak_big / 1024:.1f})",
        )
    )
    size = os.path.getsize(big_path) / 2**20
    rows.append((f"database file size at {args.big:,} tasks", f"{size:,.0f} MiB"))

    rows.append(
        ("load average (1 min) before / after", f"{load_before:.2f} / {os.getloadavg()[0]:.2f}")
    )
    width = max(len(name) for name, _ in rows)
    print(f"{'measure':<{width}}  result")
    print(f"{'-' * width}  {'-' * 40}")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    if not args.keep:
        for file in workdir.iterdir():
            file.unlink()
        workdir.rmdir()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=20_000, help="tasks per write run")
    parser.add_argument("--repeat", type=int, default=5, help="write runs of each kind")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument(
        "--synchronous", default="FULL", help="for the write runs: FULL (default) or NORMAL"
    )
    parser.add_argument("--dir", default=".", help="where the database files go")
    parser.add_argument("--keep", action="store_true", help="keep the database files")
    parser.add_argument(
        "--switch-interval",
        type=float,
        help="sys.setswitchinterval() for the run (CPython's default is 0.005 s)",
    )
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--probe-size", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.switch_interval:
        sys.setswitchinterval(arguments.switch_interval)
    if arguments.probe:
        asyncio.run(_probe(arguments.probe, arguments.probe_size))
    else:
        asyncio.run(main(arguments))
