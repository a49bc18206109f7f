"""One wrk run of a scenario, with its latency percentiles as wrk reports them and as measured.

wrk (4.1.0, the one these benchmarks use) "corrects" its latency histogram for coordinated
omission before a script's ``done()`` reads it (``stats_correct``): every request that took
``n`` µs, with ``n`` at least twice the mean interval between requests on a connection
(``interval`` = run time / (requests / connections)), adds one made-up sample at each of
``n - interval``, ``n - 2 * interval``, … down to ``interval``: the requests that a client
sending at a fixed rate would have seen waiting behind it. So every percentile printed by
benchmarks/lua.py includes them: at one connection, a single 100 ms stall of the server (or
of the machine) during GetTask at 10,000 requests/s adds ~1,000 samples between 0.1 and
100 ms, 2 % of a 5 s run, which alone moves p99 to ~50 ms.

This script appends to lua.py's ``done()`` the histogram as recorded, recovered from the
corrected one (where the correction added to bucket ``m > interval`` the recorded count of
every ``m + k * interval``, the recorded count is ``C[m] - C[m + interval]``) and checked: its
total must equal the number of requests. It prints both lines (``RESULT``: wrk's, ``RAW``: as
recorded).

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

_RAW_DONE = r"""
local corrected_done = done
function done(summary, latency, requests)
  corrected_done(summary, latency, requests)
  local interval = math.floor(summary.duration / math.floor(summary.requests / CONNECTIONS))
  local corrected = {}
  for i = 1, #latency do
    local value, count = latency(i)
    corrected[value] = count
  end
  local recorded, total = {}, 0
  for value, count in pairs(corrected) do
    local own = count
    if value > interval then own = count - (corrected[value + interval] or 0) end
    if own > 0 then
      recorded[#recorded + 1] = {value, own}
      total = total + own
    end
  end
  table.sort(recorded, function(a, b) return a[1] < b[1] end)
  local function percentile(p)
    local rank = math.floor(p / 100 * total + 0.5)
    local seen = 0
    for _, entry in ipairs(recorded) do
      seen = seen + entry[2]
      if seen >= rank then return entry[1] end
    end
    return 0
  end
  io.write(string.format(
    'RAW {"requests": %d, "recorded": %d, "interval_us": %d, "p50_us": %d, "p90_us": %d, ' ..
    '"p99_us": %d, "p999_us": %d, "max_us": %d}\n',
    summary.requests, total, interval, percentile(50), percentile(90), percentile(99),
    percentile(99.9), latency.max))
end
"""


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
    )
    text = f"CONNECTIONS = {args.connections}\n{text}\n{_RAW_DONE}"
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        lua.write(text)
        lua.flush()
        wrk = ["wrk", "-t1", f"-c{args.connections}", f"-d{args.seconds}s", "-s", lua.name]
        out = subprocess.run([*wrk, args.url], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        if line.startswith(("RESULT ", "RAW ", "BADSAMPLE ")):
            print(line)


if __name__ == "__main__":
    main()
