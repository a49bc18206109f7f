"""``accord serve`` with the SQLite store's task reads timed, for a GetTask tail in question.

Wraps ``SqliteStore._read_task_row`` (a read the row cache missed) and
``SqliteStore.get_snapshot`` (what GetTask asks the store for) with wall-clock and thread-CPU
timers; at exit writes their percentiles (the first tenth of the calls left out: the warm-up)
to ``--out`` as JSON, with the slowest 1 %'s mean wall and CPU time: a slow read with wall
time well above its CPU time waited (on the disk, or for the CPU).

    python benchmarks/sqlite_read_times.py --out r.json serve --store sqlite:///t.db --agent echo
"""

from __future__ import annotations

import argparse
import atexit
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from accord.store import _sqlite

Samples = list[tuple[int, int]]  # (wall ns, thread CPU ns) per call


def _timed_read(samples: Samples, read: Callable[..., Any]) -> Callable[..., Any]:
    def timed(self: Any, task_id: str) -> Any:
        wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
        try:
            return read(self, task_id)
        finally:
            samples.append((time.perf_counter_ns() - wall, time.thread_time_ns() - cpu))

    return timed


def _timed_snapshot(samples: Samples, get: Callable[..., Any]) -> Callable[..., Any]:
    async def timed(self: Any, task_id: str, tenant: str) -> Any:
        wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
        try:
            return await get(self, task_id, tenant)
        finally:
            samples.append((time.perf_counter_ns() - wall, time.thread_time_ns() - cpu))

    return timed


def summary(samples: Samples) -> dict[str, Any]:
    kept = samples[len(samples) // 10 :]
    walls = sorted(wall for wall, _ in kept)
    cpus = sorted(cpu for _, cpu in kept)

    def at(values: list[int], share: float) -> float:
        return values[min(len(values) - 1, int(len(values) * share))] / 1000

    cut = at(walls, 0.99) * 1000
    slow = [sample for sample in kept if sample[0] >= cut]
    return {
        "calls": len(kept),
        "wall_us_p50_p99_p999_max": [
            at(walls, 0.5),
            at(walls, 0.99),
            at(walls, 0.999),
            walls[-1] / 1000,
        ],
        "cpu_us_p50_p99_p999": [at(cpus, 0.5), at(cpus, 0.99), at(cpus, 0.999)],
        "slowest_1pct_mean_wall_us": sum(w for w, _ in slow) / len(slow) / 1000,
        "slowest_1pct_mean_cpu_us": sum(c for _, c in slow) / len(slow) / 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    args, rest = parser.parse_known_args()
    reads: Samples = []
    snapshots: Samples = []
    store = _sqlite.SqliteStore
    store._read_task_row = _timed_read(reads, store._read_task_row)  # type: ignore[method-assign]
    store.get_snapshot = _timed_snapshot(snapshots, store.get_snapshot)  # type: ignore[method-assign]

    def report() -> None:
        found = {name: summary(s) for name, s in (("read", reads), ("snapshot", snapshots)) if s}
        args.out.write_text(json.dumps(found, indent=1))

    atexit.register(report)
    sys.argv = ["accord", *rest]
    from accord.cli._main import main as accord

    accord()


if __name__ == "__main__":
    main()
