"""What a harness step event costs SQLite's writer, part by part: commits of one task's row
on accord's schema (its migrations), with and without the parts a status update adds.

    python3 benchmarks/sqlite_status_rewrite.py          # --tasks 3000 --rounds 40

Each commit is what a journal write commits (an event row, the task's row with a new seq and
snapshot), or that with a step event's more: its own event row, a larger snapshot (the
event's message joins the history and is the current status), and ``updated_ms`` moved (a
status update's time: ListTasks orders and filters by it, so the three index entries it
heads move); and a move that assigns the state too (unchanged). Variants alternate round by
round on the newest tasks of one tenant, ``synchronous=OFF`` (the writer's CPU, not the
disk); the report is the median CPU time per commit of each. Statements are run one by one
here (accord's writer runs an append as one statement), so the absolute numbers are higher
than the writer's; the differences are what a part costs.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from accord.store._migrations import MIGRATIONS

EDIT = "UPDATE tasks SET seq = :seq, snapshot = :snapshot WHERE id = :id"
NOTE = "UPDATE tasks SET updated_ms = :now, seq = :seq, snapshot = :snapshot WHERE id = :id"
MOVE = (
    "UPDATE tasks SET state = 2, updated_ms = :now, seq = :seq, snapshot = :snapshot WHERE id = :id"
)
EVENT = "INSERT INTO events VALUES (:id, :seq, 'x', :now, :body)"
SMALL, LARGE = 900, 3400  # snapshot bytes before and after a turn's three step events
JOURNAL, STEP = 300, 600  # a journal entry's and a step event's bytes

# name: (task statement, snapshot bytes, event rows' bytes)
VARIANTS: dict[str, tuple[str, int, tuple[int, ...]]] = {
    "journal entry, 0.9 KiB snapshot": (EDIT, SMALL, (JOURNAL,)),
    "journal entry, 3.4 KiB snapshot": (EDIT, LARGE, (JOURNAL,)),
    "+ a step event's row": (EDIT, LARGE, (JOURNAL, STEP)),
    "+ updated_ms moved (a status update)": (NOTE, LARGE, (JOURNAL, STEP)),
    "+ state assigned, unchanged": (MOVE, LARGE, (JOURNAL, STEP)),
}


def main(tasks: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        conn = sqlite3.connect(Path(folder) / "tasks.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = OFF")
        for _, statements in MIGRATIONS:
            for statement in statements:
                conn.execute(statement)
        conn.executemany(
            "INSERT INTO tasks VALUES (?, '', ?, 2, ?, ?, 1, ?)",
            [(f"t-{n:030d}", f"c-{n:030d}", n, n, os.urandom(SMALL)) for n in range(tasks)],
        )
        newest = [f"t-{n:030d}" for n in range(tasks - 200, tasks)]
        spent: dict[str, list[float]] = {name: [] for name in VARIANTS}
        seq, now = 1, 10**12
        for _ in range(rounds):
            for name, (statement, size, events) in VARIANTS.items():
                snapshot, bodies = os.urandom(size), [os.urandom(n) for n in events]
                began = time.process_time()
                for task_id in newest:
                    now += 1
                    conn.execute("BEGIN")
                    for body in bodies:
                        seq += 1
                        event = {"id": task_id, "seq": seq, "now": now, "body": body}
                        conn.execute(EVENT, event)
                    task = {"id": task_id, "seq": seq, "now": now, "snapshot": snapshot}
                    conn.execute(statement, task)
                    conn.execute("COMMIT")
                spent[name].append((time.process_time() - began) / len(newest) * 1e6)
        conn.close()
    for name, values in spent.items():
        print(f"{statistics.median(values):7.1f} µs a commit  {name}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=3000, help="tasks stored")
    parser.add_argument("--rounds", type=int, default=40, help="rounds of each variant")
    args = parser.parse_args()
    main(args.tasks, args.rounds)
