"""``accord serve`` on its in-memory store, filled with ``--tasks`` completed echo tasks first.

The tasks are populate_accord.py's (same ids, shape and times), so GetTask and ListTasks
find what they find on the SQLite store; everything after the fill is ``accord serve`` with
the arguments given (its ``--store`` must be ``memory://``): the store it opens is the
filled one.

    python benchmarks/accord_memory.py --tasks 1000 serve --store memory:// --agent echo ...

accord serve collects and freezes what it holds at start (``gc.freeze()``), which would
freeze a store filled before it; ``--unfrozen`` fills the store after that, so its tasks are
what the collector sees of tasks a running server stored.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from populate_accord import write_task

from accord.app import _build as build
from accord.store._memory import MemoryStore


async def fill(store: MemoryStore, count: int) -> None:
    for index in range(1, count + 1):
        await write_task(store, index)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=0)
    parser.add_argument(
        "--unfrozen",
        action="store_true",
        help="fill after accord serve's start-up gc.freeze(), as tasks a running server made",
    )
    args, rest = parser.parse_known_args()
    if "memory://" not in rest:
        sys.exit("accord_memory.py serves the in-memory store: pass --store memory://")
    store = MemoryStore()
    if args.unfrozen:
        freeze = gc.freeze

        def fill_after() -> None:
            freeze()
            asyncio.run(fill(store, args.tasks))

        gc.freeze = fill_after
    else:
        asyncio.run(fill(store, args.tasks))  # plain dicts: no event loop is kept
    build.open_store = lambda url, **_: store  # type: ignore[assignment]
    from accord.cli._main import main as accord

    sys.argv = ["accord", *rest]
    accord()


if __name__ == "__main__":
    main()
