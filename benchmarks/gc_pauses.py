"""Run a Python program with every garbage collection timed: at exit, the pauses per
generation (count, total, longest) go to ``--out`` as JSON, those since the last SIGUSR1
(if any). For a server under load, what
its collections cost it, apart from the machine's noise.

    python benchmarks/gc_pauses.py --out gc.json -m accord serve --store memory://
    python benchmarks/gc_pauses.py --out gc.json benchmarks/accord_memory.py --tasks 1000 serve ...
"""

from __future__ import annotations

import atexit
import gc
import json
import runpy
import signal
import sys
import time
from pathlib import Path

pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
_started = [0.0]


def _timed(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _started[0] = time.perf_counter()
    else:
        pauses[info["generation"]].append((time.perf_counter() - _started[0]) * 1000)


def _write(out: Path) -> None:
    out.write_text(
        json.dumps(
            {
                str(generation): {
                    "count": len(ms),
                    "total_ms": sum(ms),
                    "max_ms": max(ms, default=0.0),
                }
                for generation, ms in pauses.items()
            }
        )
    )


def main() -> None:
    args = sys.argv[1:]
    if len(args) < 3 or args[0] != "--out":
        sys.exit(__doc__)
    out = Path(args[1])
    atexit.register(_write, out)
    gc.callbacks.append(_timed)
    # SIGUSR1 starts the count again (benchmarks/tails.py: once the server is up and filled)
    signal.signal(signal.SIGUSR1, lambda *_: [ms.clear() for ms in pauses.values()])
    if args[2] == "-m":
        sys.argv = [args[3], *args[4:]]
        runpy.run_module(args[3], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args[2:]
        sys.path.insert(0, str(Path(args[2]).resolve().parent))
        runpy.run_path(args[2], run_name="__main__")


if __name__ == "__main__":
    main()
