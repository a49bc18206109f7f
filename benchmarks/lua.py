"""wrk Lua scripts for each scenario: a request generator and a check of every response body.

Every response goes through ``response()``; one that fails its check counts as bad (the first
one is kept as a sample). ``done()`` adds up the bad responses of all of wrk's threads and
prints one ``RESULT {json}`` line with the counts and latency percentiles.
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
function done(summary, latency, requests)
  local total, sample = 0, ""
  for _, t in ipairs(threads) do
    total = total + t:get("bad")
    local s = t:get("first_bad")
    if sample == "" and s ~= nil then sample = s end
  end
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests": %d, "duration_us": %d, "bad": %d, "socket_errors": %d, ' ..
    '"p50_us": %d, "p90_us": %d, "p99_us": %d, "p999_us": %d, "max_us": %d, "mean_us": %.1f}\n',
    summary.requests, summary.duration, total, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean))
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


def script(scenario: str, binding: str, *, run: str, stored: int, total: int) -> str:
    """The Lua text for ``scenario`` over ``binding`` (jsonrpc, rest or echo).

    ``stored``: GetTask reads ids 1..stored; ``total``: the totalSize ListTasks must report."""
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
            f'RUN = "{run}"',
            f"TOTAL = {total}",
            _COMMON,
            _HEADERS,
            _LAST_DATA,
            request,
            "response = function(status, headers, body)",
            f"  if not ({check}) then fail(status, body) end",
            "end",
        ]
    )
