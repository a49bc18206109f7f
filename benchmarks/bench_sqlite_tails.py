"""Where a durable send's tail goes on SQLite: ``--workers`` concurrent writers of echo tasks
(each task's four events in one append, as benchmarks/populate_accord.py writes them) on a
SqliteStore with its default durability (synchronous=FULL, WAL); each append timed, every
commit of the writer thread timed with what it added to the WAL (0: the WAL restarted from
its start), then the disk's own fsync, timed as benchmarks/run.py does.

    .venv/bin/python benchmarks/bench_sqlite_tails.py --sends 8000 --workers 8 [--dir /var/tmp]

The database goes on the disk of ``--dir`` (fsync costs are the point). ``--autocheckpoint N``
sets SQLite's wal_autocheckpoint on the store's connections (pages; 0: never in a commit).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from populate_accord import write_task

from accord.store import _sqlite
from accord.store._sqlite import SqliteStore
from accord.store._writer import Writer


def percentiles(ms: list[float]) -> str:
    ordered = sorted(ms)
    if not ordered:
        return "-"

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return f"{at(0.5):.2f} / {at(0.99):.2f} / {at(0.999):.2f} / {ordered[-1]:.1f}"


async def run(path: Path, sends: int, workers: int, first: int) -> dict[str, Any]:
    commits: list[tuple[float, int, int, int]] = []  # ms, writes, WAL bytes before, after
    wal = Path(f"{path}-wal")
    original = Writer._commit

    def timed(self: Writer, conn: Any, batch: list[Any]) -> Any:
        before = wal.stat().st_size if wal.exists() else 0
        started = time.perf_counter()
        done = original(self, conn, batch)
        after = wal.stat().st_size if wal.exists() else 0
        commits.append(((time.perf_counter() - started) * 1000, len(batch), before, after))
        return done

    Writer._commit = timed  # type: ignore[method-assign]
    store = SqliteStore(str(path))
    await store.open()
    sends_ms: list[float] = []
    indexes = iter(range(first, first + sends))

    async def worker() -> None:
        for index in indexes:
            started = time.perf_counter()
            await write_task(store, index)
            sends_ms.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    try:
        await asyncio.gather(*(worker() for _ in range(workers)))
    finally:
        await store.close()
        Writer._commit = original  # type: ignore[method-assign]
    return {"seconds": time.perf_counter() - started, "sends": sends_ms, "commits": commits}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sends", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--dir", default="/var/tmp")
    parser.add_argument("--autocheckpoint", type=int, help="PRAGMA wal_autocheckpoint")
    args = parser.parse_args()
    if args.autocheckpoint is not None:
        connect = _sqlite._connect

        def with_checkpoint(path: str, synchronous: str) -> Any:
            conn = connect(path, synchronous)
            conn.execute(f"PRAGMA wal_autocheckpoint = {args.autocheckpoint}")
            return conn

        _sqlite._connect = with_checkpoint  # type: ignore[assignment]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "tails.db"
        result = asyncio.run(run(path, args.sends, args.workers, 1))
    commits = result["commits"]
    print(f"sends: {args.sends} by {args.workers} workers in {result['seconds']:.1f} s")
    print(f"  one task (one append) ms p50 / p99 / p99.9 / max: {percentiles(result['sends'])}")
    print(f"  commits: {len(commits)}, writes per commit {args.sends / max(len(commits), 1):.1f}")
    print(f"  commit ms p50 / p99 / p99.9 / max: {percentiles([c[0] for c in commits])}")
    slow = sorted(commits, reverse=True)[: max(len(commits) // 100, 1)]
    print(
        "  WAL KiB added by the slowest 1% of commits:",
        [round((c[3] - c[2]) / 1024) for c in slow],
    )
    from run import fsync_latency_us  # benchmarks/run.py

    fsync_ms = [us / 1000 for us in fsync_latency_us(Path(args.dir), 2000)]
    print(f"  the disk: one 4 KiB page rewritten and fsynced, ms p50 / p99 / p99.9 / max:"
          f" {percentiles(fsync_ms)}")  # fmt: skip
    os.sync()


if __name__ == "__main__":
    main()
