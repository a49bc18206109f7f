"""What wrk 4.1.0 gives the benchmark's Lua scripts (benchmarks/lua.py), for running them in
LuaJIT as wrk runs them: its request helpers, a thread, ``io.write`` collected, and its
latency histogram as ``done()`` sees it, corrected for coordinated omission the way wrk's
``stats_correct`` does (written out here from its C).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

try:  # the Lua wrk embeds; its language is Lua 5.1's
    from lupa import luajit21 as lua_runtime
except ImportError:  # a platform whose lupa wheel has no LuaJIT
    from lupa import lua51 as lua_runtime  # type: ignore[no-redef]

# wrk.format() returns the request's parts instead of its bytes, a thread's set/get are the
# script's own globals (one thread), io.write collects what done() prints. histogram() is
# wrk's stats userdata: #latency (distinct values), latency(i) (the i-th smallest value and
# its count, walking from the smallest: READ keeps the furthest i asked for), latency.max,
# latency.mean and latency:percentile(p).
WRK = """
wrk = {headers = {}, path = "/"}
function wrk.format(method, path, headers, body)
  return {method = method, path = path, body = body}
end
printed = {}
io.write = function(...)
  for i = 1, select("#", ...) do printed[#printed + 1] = tostring(select(i, ...)) end
end
one_thread = {
  set = function(self, name, value) _G[name] = value end,
  get = function(self, name) return _G[name] end,
}
READ = 0
function histogram(values, counts, max, mean, percentile)
  local proxy = newproxy(true)
  local meta = getmetatable(proxy)
  meta.__len = function() return #values end
  meta.__call = function(_, i)
    if i > READ then READ = i end
    if i > #values then return 0, 0 end
    return values[i], counts[i]
  end
  meta.__index = function(_, key)
    if key == "max" then return max end
    if key == "mean" then return mean end
    if key == "percentile" then return function(_, p) return percentile(p) end end
  end
  return proxy
end
"""


def new_runtime() -> Any:
    runtime = lua_runtime.LuaRuntime(unpack_returned_tuples=True)
    runtime.execute(WRK)
    return runtime


def wrk_corrected(recorded: dict[int, int], interval: int) -> dict[int, int]:
    """wrk 4.1.0's stats_correct(): every value ``n`` from ``2 * interval`` up adds its count
    to ``n - interval``, ``n - 2 * interval``, … while above ``interval``."""
    data = dict(recorded)
    for n in range(2 * interval, max(recorded) + 1):
        count = data.get(n, 0)
        m = n - interval
        while count and m > interval:
            data[m] = data.get(m, 0) + count
            m -= interval
    return {value: count for value, count in data.items() if count}


def wrk_percentile(histogram: dict[int, int], p: float) -> int:
    """wrk's stats_percentile(): the smallest value whose running count reaches
    round(p / 100 * count + 0.5) (C's round: half away from zero; exact here)."""
    rank = math.floor(Fraction(str(p)) / 100 * sum(histogram.values()) + 1)
    seen = 0
    for value in sorted(histogram):
        seen += histogram[value]
        if seen >= rank:
            return value
    return 0


def latency(runtime: Any, corrected: dict[int, int]) -> Any:
    """The stats userdata done() gets for the ``corrected`` histogram."""
    values = sorted(corrected)
    total = sum(corrected.values())
    mean = sum(v * c for v, c in corrected.items()) / total if total else 0.0
    return runtime.globals().histogram(
        runtime.table_from(values),
        runtime.table_from([corrected[v] for v in values]),
        max(values, default=0),
        mean,
        lambda p: wrk_percentile(corrected, p),
    )


def summary(runtime: Any, requests: int, duration_us: int) -> Any:
    return runtime.table_from(
        {
            "requests": requests,
            "duration": duration_us,
            "errors": runtime.table_from({"connect": 0, "read": 0, "write": 0, "timeout": 0}),
        }
    )


def result_line(runtime: Any) -> dict[str, Any]:
    """The RESULT line done() printed, decoded."""
    lines = "".join(runtime.globals().printed.values()).splitlines()
    [result] = [line for line in lines if line.startswith("RESULT ")]
    decoded: dict[str, Any] = json.loads(result[len("RESULT ") :])
    return decoded
