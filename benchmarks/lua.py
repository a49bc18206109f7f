"""wrk Lua scripts for each scenario: a request generator and a check of every response body.

Every response goes through ``response()``; one that fails its check counts as bad (the first
one is kept as a sample). ``done()`` adds up the bad responses of all of wrk's threads and
prints one ``RESULT {json}`` line with the counts and two sets of latency percentiles:

- ``p50_us`` … ``p999_us``: **as recorded**, one sample per request made. The targets are
  judged on these.
- ``wrk_p50_us`` … ``wrk_p999_us``, ``wrk_mean_us``: **wrk's**, of the histogram wrk 4.1.0
  corrects for coordinated omission before ``done()`` reads it (``stats_correct``): every
  request that took ``n`` µs, with ``n`` at least twice the mean interval between requests
  on a connection (``interval_us`` = run time / (requests // connections)), adds one made-up
  sample at each of ``n - interval``, ``n - 2 * interval``, … down to the interval. At one
  connection a single 100 ms stall during 10,000 requests/s adds ~1,000 samples from 0.1 to
  100 ms: 2 % of a 5 s run, p99 ~50 ms.

``max_us`` is both's (the correction adds only below a request's own time). The recorded
histogram is recovered from the corrected one: the correction added to each bucket ``m``
above the interval the recorded count of every ``m + k * interval``, so the recorded count is
``C[m] - C[m + interval]``; these telescope, so the number of requests recorded
(``recorded``) is the corrected count at or below ``2 * interval``, and it must equal
``requests`` (benchmarks/load_results.py refuses a run where it does not). The interval
needs the number of connections wrk ran with: ``script()``'s ``connections``, wrk's ``-c``.
wrk hands a script its histogram one value at a time, each read walking it from the
smallest value, so ``done()`` reads only up to the recorded p99.9 plus one interval (a run
with a 3 s stall would otherwise spend a minute there) and gives no recorded mean.
"""

from __future__ import annotations

_COMMON = r"""
local threads = {}
function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end
bad = 0
counter = 0
first_bad = ""
local function fail(status, body)
  bad = bad + 1
  if first_bad == "" then first_bad = tostring(status) .. " " .. string.sub(body, 1, 400) end
end
local function has(body, text) return string.find(body, text, 1, true) ~= nil end
local function count(body, text)
  local n, start = 0, 1
  while true do
    local i = string.find(body, text, start, true)
    if i == nil then return n end
    n = n + 1
    start = i + #text
  end
end
local function task_id(i) return string.format("00000000-0000-0000-0000-%012x", i) end
-- The recorded percentiles (k in thousandths: 500 is p50, 999 is p99.9) and the number of
-- requests recorded, recovered from wrk's corrected histogram (see lua.py). latency(i) is
-- the histogram's i-th smallest value and its count; each call walks the histogram from its
-- smallest value, so this reads only as far as the largest percentile asked for needs.
local function recorded(latency, interval, ks)
  local size, read, values, counts = #latency, 0, {}, {}
  local function fetch(i)  -- bucket i read, if there is one
    while read < i and read < size do
      read = read + 1
      local value, n = latency(read)
      values[read], counts[value] = value, n
    end
    return i <= read
  end
  local function own(i)  -- the recorded count of bucket i: C[m] - C[m + interval]
    local value = values[i]
    if interval == 0 or value <= interval then return counts[value] end
    while values[read] < value + interval and fetch(read + 1) do end
    return counts[value] - (counts[value + interval] or 0)
  end
  -- The recorded counts telescope: their total is the corrected count at or below 2 * interval.
  local total, last = 0, interval > 0 and 2 * interval or math.huge
  local i = 1
  while fetch(i) and values[i] <= last do
    total = total + counts[values[i]]
    i = i + 1
  end
  local found, seen = {}, 0
  i = 0
  for _, k in ipairs(ks) do
    -- wrk's rank (stats_percentile): round(p / 100 * n + 0.5), exact in thousandths
    local rank = math.floor(k * total / 1000) + 1
    while seen < rank and fetch(i + 1) do
      i = i + 1
      seen = seen + own(i)
    end
    found[#found + 1] = seen >= rank and values[i] or 0
  end
  return total, found
end
function done(summary, latency, requests)
  local failed, sample = 0, ""
  for _, t in ipairs(threads) do
    failed = failed + t:get("bad")
    local s = t:get("first_bad")
    if sample == "" and s ~= nil then sample = s end
  end
  local e = summary.errors
  -- wrk's interval: run time over requests per connection (none below one per connection)
  local per_connection = math.floor(summary.requests / CONNECTIONS)
  local interval = 0
  if per_connection > 0 then interval = math.floor(summary.duration / per_connection) end
  local total, p = recorded(latency, interval, {500, 900, 990, 999})
  io.write(string.format(
    'RESULT {"requests": %d, "duration_us": %d, "bad": %d, "socket_errors": %d, ' ..
    '"connections": %d, "interval_us": %d, "recorded": %d, ' ..
    '"p50_us": %d, "p90_us": %d, "p99_us": %d, "p999_us": %d, "max_us": %d, ' ..
    '"wrk_p50_us": %d, "wrk_p90_us": %d, "wrk_p99_us": %d, "wrk_p999_us": %d, ' ..
    '"wrk_mean_us": %.1f}\n',
    summary.requests, summary.duration, failed, e.connect + e.read + e.write + e.timeout,
    CONNECTIONS, interval, total, p[1], p[2], p[3], p[4], latency.max,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.mean))
  if sample ~= "" then io.write("BADSAMPLE " .. string.gsub(sample, "\n", " ") .. "\n") end
end
"""

_HEADERS = r"""
wrk.headers["Content-Type"] = "application/json"
wrk.headers["A2A-Version"] = "1.0"
"""

_MESSAGE = (
    r"""'{"messageId":"m-' .. RUN .. '-' .. tid .. '-' .. counter .. '","role":"ROLE_USER",'"""
    r""" .. '"parts":[{"text":"hello ' .. counter .. '"}]}'"""
)


def _jsonrpc(method: str, params: str) -> str:
    return (
        r"""local body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"""
        + f'"{method}"'
        + r""","params":' .. """
        + params
        + " .. '}'\n"
    )


def _request(binding: str, method: str, rest_method: str, rest_path: str, params: str) -> str:
    """A request() for JSON-RPC (``params`` a Lua expression) or REST (path and body)."""
    if binding == "jsonrpc":
        build = _jsonrpc(method, params)
        send = 'return wrk.format("POST", wrk.path, nil, body)'
    else:
        build = f"local body = {params if rest_method == 'POST' else 'nil'}\n"
        send = f'return wrk.format("{rest_method}", {rest_path}, nil, body)'
    return f"request = function()\n  counter = counter + 1\n  {build}  {send}\nend\n"


_OK_JSON = "status == 200 and not has(body, '\"error\"')"

_CHECKS = {
    # The blocking send answers with the completed task carrying the echo artifact.
    "send": f"{_OK_JSON} and has(body, 'echo: hello ') and has(body, 'TASK_STATE_COMPLETED')",
    # A full stream: the echo artifact in it, and its last event is the COMPLETED status.
    "stream": (
        "status == 200 and has(body, 'echo: hello ') and last_data(body) ~= nil"
        " and has(last_data(body), 'TASK_STATE_COMPLETED') and count(body, 'data:') >= 4"
    ),
    "get": f"{_OK_JSON} and has(body, 'echo: hello ') and has(body, 'TASK_STATE_COMPLETED')",
    # A full first page of completed tasks, and the total the store was filled with.
    "list": (
        f"{_OK_JSON} and count(body, 'TASK_STATE_COMPLETED') == 50"
        " and string.find(body, '\"totalSize\":%s*' .. TOTAL .. '[,}]') ~= nil"
    ),
    "echo": "status == 200 and has(body, '\"result\"') and has(body, '\"id\":')",
}

_LAST_DATA = r"""
function last_data(body)
  local last = nil
  for line in string.gmatch(body, "data:([^\r\n]*)") do last = line end
  return last
end
"""


def header(run: str, connections: int, total: int = 0) -> str:
    """The globals every script sets: its run id (fresh message ids), the connections wrk
    runs with (``done()``'s interval) and the totalSize ListTasks must report."""
    if connections < 1:
        raise ValueError(f"connections must be at least 1, not {connections}")
    return f'RUN = "{run}"\nCONNECTIONS = {connections}\nTOTAL = {total}'


def script(
    scenario: str, binding: str, *, run: str, stored: int, total: int, connections: int
) -> str:
    """The Lua text for ``scenario`` over ``binding`` (jsonrpc, rest or echo).

    ``stored``: GetTask reads ids 1..stored; ``total``: the totalSize ListTasks must report;
    ``connections``: wrk's ``-c`` (the interval of its coordinated-omission correction)."""
    wire = "jsonrpc" if binding == "echo" else binding
    pick = f"task_id((counter * 7919) % {max(stored, 1)} + 1)"
    if scenario == "send":
        request = _request(
            wire,
            "SendMessage",
            "POST",
            '"/message:send"',
            f"""'{{"message":' .. {_MESSAGE} .. '}}'""",
        )
    elif scenario == "stream":
        request = _request(
            wire,
            "SendStreamingMessage",
            "POST",
            '"/message:stream"',
            f"""'{{"message":' .. {_MESSAGE} .. '}}'""",
        )
    elif scenario == "get":
        request = _request(
            wire, "GetTask", "GET", f'"/tasks/" .. {pick}', f"""'{{"id":"' .. {pick} .. '"}}'"""
        )
    elif scenario == "list":
        request = _request(
            wire, "ListTasks", "GET", '"/tasks?pageSize=50"', """'{"pageSize":50}'"""
        )
    else:
        raise ValueError(scenario)
    check = _CHECKS["echo" if binding == "echo" else scenario]
    return "\n".join(
        [
            header(run, connections, total),
            _COMMON,
            _HEADERS,
            _LAST_DATA,
            request,
            "response = function(status, headers, body)",
            f"  if not ({check}) then fail(status, body) end",
            "end",
        ]
    )
