"""The cost of the global feed (run by hand): SQLite task creations per second with the feed
triggers of migration 3 and without them, in alternating runs on fresh files.

    .venv/bin/python benchmarks/bench_feed.py [--tasks 8000] [--rounds 6]

A task is what bench_store.py writes with 4 appends (SendMessage, StartWorking,
UpdateArtifact, CompleteTask) from 256 coroutines; each append adds one feed row.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_store

from accord.store._sqlite import SqliteStore

TRIGGERS = (
    "tasks_feed_insert",
    "tasks_feed_update",
    "push_configs_feed_insert",
    "push_configs_feed_update",
    "push_configs_feed_delete",
)


async def rate(directory: str, with_feed: bool, tasks: int) -> float:
    path = str(Path(tempfile.mkdtemp(dir=directory)) / "feed.db")
    store = SqliteStore(path)
    await store.open()
    await store.close()
    if not with_feed:
        conn = sqlite3.connect(path)
        for trigger in TRIGGERS:
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.commit()
        conn.close()
    store = SqliteStore(path)
    await store.open()
    seconds = await bench_store._write_tasks(store, 0, tasks, 256, False)
    await store.close()
    return tasks / seconds


async def main(args: argparse.Namespace) -> None:
    results: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        for round_ in range(args.rounds):
            for with_feed in (round_ % 2 == 0, round_ % 2 == 1):
                results[with_feed].append(await rate(directory, with_feed, args.tasks))
    for with_feed, rates in results.items():
        label = "with feed   " if with_feed else "without feed"
        print(f"{label}: median {statistics.median(rates):,.0f} tasks/s, best {max(rates):,.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=8000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--dir", default=".")
    asyncio.run(main(parser.parse_args()))
