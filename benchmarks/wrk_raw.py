"""One wrk run of a scenario, printing its result with both kinds of latency percentiles.

benchmarks/lua.py's ``RESULT`` line carries the percentiles of the requests as recorded
(``p50_us`` … ``p999_us``) and as wrk 4.1.0 reports them after its coordinated-omission
correction (``wrk_p50_us`` …); see lua.py for the correction and how the recorded histogram
is recovered from it. This runs one scenario once, for a look at one server without
benchmarks/run.py or benchmarks/tails.py around it:

    python benchmarks/wrk_raw.py --scenario get --stored 1000000 --connections 1 \\
        --seconds 5 http://127.0.0.1:8000/
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lua import script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--scenario", default="get", help="lua.py's: get, send, stream …")
    parser.add_argument("--binding", default="jsonrpc")
    parser.add_argument("--stored", type=int, default=1000, help="GetTask reads ids 1..stored")
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    text = script(
        args.scenario,
        args.binding,
        run=f"raw-{time.time_ns()}",
        stored=args.stored,
        total=args.stored,
        connections=args.connections,
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        lua.write(text)
        lua.flush()
        wrk = ["wrk", "-t1", f"-c{args.connections}", f"-d{args.seconds}s", "-s", lua.name]
        out = subprocess.run([*wrk, args.url], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        if line.startswith(("RESULT ", "BADSAMPLE ")):
            print(line)


if __name__ == "__main__":
    main()
