"""benchmarks/lua.py's done(): the latency percentiles of the requests as recorded, recovered
from the histogram wrk 4.1.0 corrects for coordinated omission, beside wrk's own; run in
LuaJIT as wrk runs it, against wrk's correction written out in Python (tests/benchmarks/
wrk_stub.py). If the recovery broke, the recorded percentiles would be wrk's again, or the
count of requests it recovers would differ from the run's and load_results.py refuse it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.benchmarks.wrk_stub import (
    latency,
    new_runtime,
    result_line,
    summary,
    wrk_corrected,
    wrk_percentile,
)

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # last: its modules shadow nothing

from load_results import load_result  # noqa: E402  (benchmarks/ is not a package)
from lua import script  # noqa: E402


def done(
    recorded: dict[int, int], *, connections: int, duration_us: int, script_connections: int = 0
) -> tuple[dict[str, Any], int]:
    """The RESULT line of a GetTask script (made for ``script_connections``, by default the
    run's) after a run that recorded ``recorded``, and how far done() read the histogram."""
    requests = sum(recorded.values())
    interval = duration_us // (requests // connections)
    corrected = wrk_corrected(recorded, interval)
    runtime = new_runtime()
    made_for = script_connections or connections
    runtime.execute(script("get", "jsonrpc", run="t", stored=10, total=10, connections=made_for))
    lua = runtime.globals()
    lua.setup(lua.one_thread)
    lua.done(summary(runtime, requests, duration_us), latency(runtime, corrected), None)
    return result_line(runtime), int(lua.READ)


def accepted(line: dict[str, Any], connections: int) -> Any:
    return load_result(line, "", scenario="get", stored=10, target="t",
                       connections=connections, repeat=0, cpu_seconds=0.0)  # fmt: skip


def test_one_stall_is_one_request_not_a_percent_of_them() -> None:
    # 9,999 requests of 60-69 µs and one of 100 ms, one connection, in one second: wrk's
    # correction adds ~1,000 samples between 0.1 and 100 ms, which as recorded are not there.
    recorded = {60 + i: 0 for i in range(10)}
    for i in range(9_999):
        recorded[60 + i % 10] += 1
    recorded[100_000] = 1
    corrected = wrk_corrected(recorded, 100)
    assert sum(corrected.values()) > 10_900  # the made-up samples
    line, _ = done(recorded, connections=1, duration_us=1_000_000)
    assert line["recorded"] == line["requests"] == 10_000
    assert (line["interval_us"], line["connections"]) == (100, 1)
    assert line["p50_us"] in range(60, 70)
    assert (line["p99_us"], line["p999_us"], line["max_us"]) == (69, 69, 100_000)
    # wrk's, beside them: the made-up samples' tail
    assert line["wrk_p99_us"] == wrk_percentile(corrected, 99) > 80_000
    assert line["wrk_p999_us"] == wrk_percentile(corrected, 99.9)
    result = accepted(line, 1)
    assert (result.p99_ms, result.wrk_p99_ms) == (0.069, line["wrk_p99_us"] / 1000)


def test_several_connections_and_slow_requests_come_back_as_recorded() -> None:
    recorded = {500: 4_000, 700: 3_000, 1_300: 900, 2_600: 90, 9_000: 10}
    line, _ = done(recorded, connections=8, duration_us=500_000)
    assert line["recorded"] == line["requests"] == 8_000
    assert line["interval_us"] == 500  # every value from 1,000 µs up was corrected
    assert sum(wrk_corrected(recorded, 500).values()) > 8_100
    percentiles = (line["p50_us"], line["p90_us"], line["p99_us"], line["p999_us"])
    assert percentiles == (700, 1_300, 2_600, 9_000)  # wrk's ranks: the 4,001st is 700


def test_a_long_stall_is_read_only_as_far_as_p99_9_needs() -> None:
    # A 3 s stall at 10,000 requests/s makes ~30,000 made-up values up to 3 s; reading them
    # all (each read walking from the smallest) cost a real wrk a minute. done() stops one
    # interval past the recorded p99.9.
    recorded = {40 + i: 2_000 for i in range(20)}  # 40,000 requests of 40-59 µs
    recorded[3_000_000] = 1
    line, read = done(recorded, connections=1, duration_us=4_000_000)
    assert line["interval_us"] == 99
    assert (line["recorded"], line["p999_us"], line["max_us"]) == (40_001, 59, 3_000_000)
    assert len(wrk_corrected(recorded, 99)) > 30_000
    # the 20 recorded values, the made-up 102 µs (3,000,000 - 30,302 x 99) and 201 µs, the
    # first past 2 x 99 (the recorded total) and past 59 + 99 (the recorded p99.9's count)
    assert read == 22
    assert line["wrk_p99_us"] > 2_000_000


def test_a_script_made_for_other_connections_is_refused() -> None:
    # wrk ran 8 connections, the script believed 1: its interval is 8x too small, and what
    # it recovers is not the run's requests.
    recorded = {500: 4_000, 700: 3_000, 1_300: 900, 2_600: 90, 9_000: 10}
    line, _ = done(recorded, connections=8, duration_us=500_000, script_connections=1)
    assert line["recorded"] != line["requests"]
    with pytest.raises(ValueError, match="recorded histogram holds"):
        accepted(line, 8)
    with pytest.raises(ValueError, match="made for 1 connections"):
        accepted(dict(line, recorded=line["requests"]), 8)


@given(
    counts=st.dictionaries(st.integers(1, 3_000), st.integers(1, 50), min_size=1, max_size=60),
    connections=st.sampled_from([1, 2, 8, 32]),
    interval=st.integers(5, 400),
)
def test_any_run_recovers_the_recorded_percentiles(
    counts: dict[int, int], connections: int, interval: int
) -> None:
    requests = sum(counts.values())
    if requests < connections:
        counts[1] = counts.get(1, 0) + connections
        requests = sum(counts.values())
    per_connection = requests // connections
    duration = interval * per_connection + per_connection - 1  # floors to ``interval``
    line, _ = done(counts, connections=connections, duration_us=duration)
    assert line["interval_us"] == interval
    assert line["recorded"] == requests
    for key, p in (("p50_us", 50), ("p90_us", 90), ("p99_us", 99), ("p999_us", 99.9)):
        assert line[key] == wrk_percentile(counts, p)
        assert line[f"wrk_{key}"] == wrk_percentile(wrk_corrected(counts, interval), p)
    accepted(line, connections)
