"""benchmarks/wrk_raw.py: the latency histogram as recorded, recovered from the one wrk
corrects for coordinated omission, run in LuaJIT as wrk runs it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

try:  # the Lua wrk embeds; its language is Lua 5.1's
    from lupa import luajit21 as lua_runtime
except ImportError:  # a platform whose lupa wheel has no LuaJIT
    from lupa import lua51 as lua_runtime  # type: ignore[no-redef]

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # last: its modules shadow nothing

from wrk_raw import _RAW_DONE  # noqa: E402  (benchmarks/ is not a package)

# wrk's latency statistics object as done() sees it: a userdata with #latency (distinct
# values), latency(i) (the i-th distinct value and its count) and latency.max.
_STUB = """
printed = {}
io.write = function(...)
  for i = 1, select("#", ...) do printed[#printed + 1] = tostring(select(i, ...)) end
end
function done(summary, latency, requests) end
function histogram(values, counts, max)
  local proxy = newproxy(true)
  local meta = getmetatable(proxy)
  meta.__len = function() return #values end
  meta.__call = function(_, i) return values[i], counts[i] end
  meta.__index = function(_, key) if key == "max" then return max end end
  return proxy
end
"""


def _wrk_corrected(recorded: dict[int, int], interval: int) -> dict[int, int]:
    """What wrk 4.1.0's stats_correct makes of ``recorded`` (its loop, in Python)."""
    data = dict(recorded)
    for n in range(2 * interval, max(recorded) + 1):
        count = data.get(n, 0)
        m = n - interval
        while count and m > interval:
            data[m] = data.get(m, 0) + count
            m -= interval
    return {value: count for value, count in data.items() if count}


def _raw_line(recorded: dict[int, int], connections: int, duration_us: int) -> dict[str, int]:
    requests = sum(recorded.values())
    interval = duration_us // (requests // connections)
    corrected = _wrk_corrected(recorded, interval)
    runtime = lua_runtime.LuaRuntime(unpack_returned_tuples=True)
    runtime.execute(_STUB)
    runtime.execute(f"CONNECTIONS = {connections}\n{_RAW_DONE}")
    values = sorted(corrected)
    lua_values = runtime.table_from(values)
    lua_counts = runtime.table_from([corrected[v] for v in values])
    latency = runtime.globals().histogram(lua_values, lua_counts, max(values))
    summary = runtime.table_from({"duration": duration_us, "requests": requests})
    runtime.globals().done(summary, latency, None)
    (line,) = [p for p in runtime.globals().printed.values() if p.startswith("RAW ")]
    return json.loads(line[4:])  # type: ignore[no-any-return]


def test_one_stall_is_one_request_not_a_percent_of_them() -> None:
    # 9,999 requests of 60-69 µs and one of 100 ms, one connection, in one second: wrk's
    # correction adds ~1,000 samples between 0.1 and 100 ms, which as recorded are not there.
    recorded = {60 + i % 10: 0 for i in range(10)}
    for i in range(9_999):
        recorded[60 + i % 10] += 1
    recorded[100_000] = 1
    assert sum(_wrk_corrected(recorded, 100).values()) > 10_900  # the made-up samples
    raw = _raw_line(recorded, connections=1, duration_us=1_000_000)
    assert raw["recorded"] == raw["requests"] == 10_000
    assert raw["interval_us"] == 100
    assert raw["p50_us"] in range(60, 70)
    assert raw["p99_us"] == 69
    assert raw["p999_us"] == 69
    assert raw["max_us"] == 100_000


def test_several_connections_and_slow_requests_come_back_as_recorded() -> None:
    recorded = {500: 4_000, 700: 3_000, 1_300: 900, 2_600: 90, 9_000: 10}
    raw = _raw_line(recorded, connections=8, duration_us=500_000)
    assert raw["recorded"] == raw["requests"] == 8_000
    assert raw["interval_us"] == 500  # every value from 1,000 µs up was corrected
    assert sum(_wrk_corrected(recorded, 500).values()) > 8_100
    percentiles = (raw["p50_us"], raw["p90_us"], raw["p99_us"], raw["p999_us"])
    assert percentiles == (500, 1_300, 2_600, 9_000)
