"""The in-memory store at size: what the cyclic garbage collector walks, what a full collection
costs, RSS, and the latency of appends and reads with the collector running as it does in a
server.

Each form runs in a process of its own: ``--tasks`` completed echo tasks written through the
store API (populate_accord.py's tasks, with the request key a SendMessage stores), then
``--ops`` new tasks appended and ``--ops`` GetTask-like reads (``get_task`` +
``get_snapshot`` of a random stored task), each timed alone.

Forms: ``store`` (the MemoryStore as built), ``store+freeze`` (the same, ``gc.freeze()``
after the fill: what a periodic freeze would give), and ``--old FILE`` adds ``old``: another
``_memory.py`` (e.g. ``git show main:src/accord/store/_memory.py > /tmp/old.py``) to compare
builds in one run.

    .venv/bin/python benchmarks/bench_memory_store.py --tasks 100000 --ops 20000 --old /tmp/old.py
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import random
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from populate_accord import write_task

from accord.core import RequestKey


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return {"p50": at(0.5), "p99": at(0.99), "p99.9": at(0.999), "max": ordered[-1] * 1000}


def load_store(old: str | None) -> Any:
    if old is None:
        from accord.store._memory import MemoryStore

        return MemoryStore()
    spec = importlib.util.spec_from_file_location("accord.store._memory_old", old)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.MemoryStore()


async def send(store: Any, index: int) -> None:
    """One task as a SendMessage leaves it: the echo task and its request key."""
    key = RequestKey("", "", f"m:m{index}", b"f" * 32, 1_700_000_000_000 + index)
    original = store.append

    async def append(record: Any, events: Any, expected_seq: int) -> None:
        await original(record, events, expected_seq, requests=[key])

    store.append = append
    try:
        await write_task(store, index)
    finally:
        del store.append


async def measure(form: str, tasks: int, ops: int, old: str | None) -> dict[str, Any]:
    store = load_store(old if form == "old" else None)
    await store.open()
    gc.collect()
    base_rss = rss_mib()
    start = time.perf_counter()
    for index in range(1, tasks + 1):
        await send(store, index)
    fill_s = time.perf_counter() - start
    gc.collect()
    if form == "store+freeze":
        gc.freeze()
    tracked = len(gc.get_objects())
    full = []
    for _ in range(5):
        t0 = time.perf_counter()
        gc.collect()
        full.append(time.perf_counter() - t0)
    rss = rss_mib()
    collections_before = gc.get_stats()[2]["collections"]
    appends = []
    for index in range(tasks + 1, tasks + ops + 1):
        t0 = time.perf_counter()
        await send(store, index)
        appends.append(time.perf_counter() - t0)
    reads = []
    rng = random.Random(1)
    for _ in range(ops):
        task_id = str(uuid.UUID(int=rng.randint(1, tasks + ops)))
        t0 = time.perf_counter()
        await store.get_task(task_id, "")
        await store.get_snapshot(task_id, "")
        reads.append(time.perf_counter() - t0)
    return {
        "form": form,
        "tasks": tasks,
        "fill_s": fill_s,
        "tracked_objects": tracked,
        "gen2_ms": statistics.median(full) * 1000,
        "rss_mib": rss,
        "store_mib": rss - base_rss,
        "full_collections_during_ops": gc.get_stats()[2]["collections"] - collections_before,
        "append_ms": percentiles(appends),
        "read_ms": percentiles(reads),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--old", help="another _memory.py to compare (form 'old')")
    parser.add_argument("--forms", default="store,store+freeze")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        result = asyncio.run(measure(args.one, args.tasks, args.ops, args.old))
        print(json.dumps(result))
        return
    forms = (["old"] if args.old else []) + args.forms.split(",")
    print(
        "form | tasks | tracked objects | full gc ms | RSS MiB (store) | append p50/p99/p99.9/max"
        " ms | read p50/p99/p99.9/max ms | full gcs"
    )
    for form in forms:
        command = [sys.executable, __file__, "--one", form, "--tasks", str(args.tasks)]
        command += ["--ops", str(args.ops)] + (["--old", args.old] if args.old else [])
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        a, g = r["append_ms"], r["read_ms"]
        print(
            f"{form} | {r['tasks']:,} | {r['tracked_objects']:,} | {r['gen2_ms']:.1f} | "
            f"{r['rss_mib']:.0f} ({r['store_mib']:.0f}) | "
            f"{a['p50']:.3f} / {a['p99']:.3f} / {a['p99.9']:.2f} / {a['max']:.0f} | "
            f"{g['p50']:.3f} / {g['p99']:.3f} / {g['p99.9']:.2f} / {g['max']:.0f} | "
            f"{r['full_collections_during_ops']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
