"""Fill an accord SQLite database with completed echo tasks, through the store directly.

Each task is written the way the engine writes what the echo agent does to a new task: the
client's SendMessage creation, StartWorking, one ``echo: hello N`` artifact and
CompleteTask, decided with the real core commands and stored as one append. Ids are
``uuid.UUID(int=N)``, N from ``--first``; status times increase with N. Tenant "" (what an
unauthenticated caller of ``accord serve`` gets).

    python benchmarks/populate_accord.py --db /tmp/accord.db --count 100000
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import time
import uuid

from accord.core._limits import Limits
from accord.core.agent import move, update_artifact
from accord.core.client import send_message
from accord.store._base import TaskStore
from accord.store._sqlite import SqliteStore
from accord.wire._model import Artifact, Message, Part, Role, SendMessageRequest

BASE_MS = 1_700_000_000_000
LIMITS = Limits()


async def write_task(store: TaskStore, index: int) -> None:
    now = BASE_MS + index
    text = f"hello {index}"
    created = send_message(
        SendMessageRequest(
            message=Message(message_id=f"m{index}", role=Role.USER, parts=[Part(text=text)])
        ),
        tenant="",
        task=None,
        tenant_task_count=0,
        now_ms=now,
        new_task_id=str(uuid.UUID(int=index)),
        new_context_id=str(uuid.UUID(int=1_000_000_000 + index)),
        limits=LIMITS,
    )
    record = created.record
    assert record is not None
    events = list(created.events)
    for step in ("work", "artifact", "complete"):
        if step == "artifact":
            artifact = Artifact(
                artifact_id=f"a{index}", name="echo", parts=[Part(text=f"echo: {text}")]
            )
            outcome = update_artifact(record, artifact, now, last_chunk=True)
        else:
            outcome = move(record, step, now)
        assert outcome.record is not None, outcome.name
        events += outcome.events
        record = outcome.record
    await store.append(record, events, 0)


async def populate(path: str, first: int, count: int, concurrency: int) -> float:
    store = SqliteStore(path, synchronous="normal")
    await store.open()
    indexes = iter(range(first, first + count))

    async def worker() -> None:
        for index in indexes:
            await write_task(store, index)

    start = time.perf_counter()
    try:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        await store.close()
        # The store closes without a checkpoint (its WAL stays beside the file): fold the WAL
        # in, so that the fill is one file a benchmark can copy alone.
        conn = sqlite3.connect(path)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--first", type=int, default=1)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    seconds = asyncio.run(populate(args.db, args.first, args.count, args.concurrency))
    print(f"wrote {args.count} tasks in {seconds:.1f} s")


if __name__ == "__main__":
    main()
