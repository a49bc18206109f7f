"""The advisory-lock connection alone: hold + release pairs per second (run by hand).

    .venv/bin/python benchmarks/bench_holds.py [--concurrency 1 8 32 128] [--seconds 5]
        [--pg postgresql://postgres@127.0.0.1:5432/postgres]

``--concurrency`` tasks each hold a lock for a fresh task id and release it, in a loop, on one
``AdvisoryHolds`` (src/accord/store/_pg_holds.py, the object a PostgreSQL node uses) for
``--seconds``. Prints pairs per second, the mean time a hold waits, and the CPU per pair of
this process and of its PostgreSQL backend. Needs no database of its own: advisory locks
are not tables.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scaleout import _cpu_seconds

from accord.store._pg_holds import AdvisoryHolds


async def _backend_pid(holds: AdvisoryHolds) -> int:
    assert await holds.hold("warm-up")
    await holds.release("warm-up")
    return await holds.backend_pid()


async def run(dsn: str, concurrency: int, seconds: float) -> None:
    holds = AdvisoryHolds(dsn)
    try:
        backend = await _backend_pid(holds)
        pairs = 0
        waited = 0.0
        stop_at = time.monotonic() + seconds

        async def worker() -> None:
            nonlocal pairs, waited
            while time.monotonic() < stop_at:
                task_id = uuid.uuid4().hex
                asked = time.monotonic()
                assert await holds.hold(task_id)
                waited += time.monotonic() - asked
                await holds.release(task_id)
                pairs += 1

        cpu, pg_cpu, wall = time.process_time(), _cpu_seconds(backend), time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.monotonic() - wall
        cpu, pg_cpu = time.process_time() - cpu, _cpu_seconds(backend) - pg_cpu
    finally:
        await holds.close()
    print(
        f"{concurrency:4} concurrent: {pairs / elapsed:8.0f} hold+release pairs/s;"
        f" a hold waits {1000 * waited / pairs:6.2f} ms; CPU per pair: this process"
        f" {1e6 * cpu / pairs:5.0f} µs, backend {1e6 * pg_cpu / pairs:5.0f} µs;"
        f" load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 128])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument(
        "--pg",
        default=os.environ.get("ACCORD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres"),
    )
    args = parser.parse_args()
    for concurrency in args.concurrency:
        asyncio.run(run(args.pg, concurrency, args.seconds))


if __name__ == "__main__":
    main()
