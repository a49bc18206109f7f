"""Child process of test_crash.py: writes tasks through a SqliteStore until it is killed.

Prints ``<task id> <seq>`` (and flushes) after every append that returned, i.e. that the
store acknowledged. Usage: python crash_writer.py DB_PATH SYNCHRONOUS
"""

from __future__ import annotations

import asyncio
import itertools
import sys

from tests.store.records import artifact, commit, created, moved

from accord.core._records import TaskRecord
from accord.store._sqlite import SqliteStore


async def main(path: str, synchronous: str) -> None:
    store = SqliteStore(path, synchronous=synchronous)
    await store.open()
    numbers = itertools.count()
    out = sys.stdout

    async def acked(record: TaskRecord) -> None:
        out.write(f"{record.id} {record.seq}\n")
        out.flush()

    async def writer() -> None:
        while True:
            index = next(numbers)
            now = 1_000_000 + index
            record = await commit(store, None, created(f"task-{index:06d}", now_ms=now))
            await acked(record)
            for step in ("work", "artifact", "complete"):
                outcome = (
                    artifact(record, now + 1)
                    if step == "artifact"
                    else moved(record, step, now + 2)
                )
                record = await commit(store, record, outcome)
                await acked(record)

    await asyncio.gather(*(writer() for _ in range(32)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
