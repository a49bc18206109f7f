"""The headline tables of benchmarks/run.py: what a load run's output becomes, which ratio
each cell shows, and when a target is called met."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # last: its modules shadow nothing

from headline import (  # noqa: E402
    against_limit,
    like_for_like,
    like_for_like_tails,
    ratio,
    send_gap,
)
from load_results import Result, load_result, tail  # noqa: E402
from run import parse_load_output  # noqa: E402


def result(
    target: str, rps: float, *, scenario: str = "send", conns: int = 8, repeat: int = 0,
    p50_ms: float = 1.0, bad: int = 0,
) -> Result:  # fmt: skip
    return Result(
        scenario=scenario, stored=1000, target=target, connections=conns, repeat=repeat,
        rps=rps, p50_ms=p50_ms, p99_ms=p50_ms * 2, mean_ms=p50_ms, requests=int(rps * 3),
        bad=bad, socket_errors=0,
    )  # fmt: skip


def test_the_load_output_gives_its_result_line_and_the_first_bad_answer() -> None:
    out = 'noise\nRESULT {"requests": 10, "p50_us": 120}\nBADSAMPLE 500 {"error"}\n'
    assert parse_load_output(out) == ({"requests": 10, "p50_us": 120}, '500 {"error"}')
    assert parse_load_output("wrk: connection refused\n") == ({}, "")


def test_a_ratio_is_of_the_medians_with_the_per_repeat_ratios_beside_it() -> None:
    runs = []
    for repeat, (ours, theirs) in enumerate([(1000, 100), (1200, 100), (900, 150)]):
        runs += [result("accord-jsonrpc", ours, repeat=repeat)]
        runs += [result("sdk-db-jsonrpc", theirs, repeat=repeat)]
    found = ratio(runs, "send", 1000, 8, "accord-jsonrpc", "sdk-db-jsonrpc")
    assert found is not None
    assert found.value == 1000 / 100  # median 1000 over median 100
    assert found.per_repeat == (10.0, 12.0, 6.0)
    assert found.meets(10.0) and not found.meets(10.5)


def test_a_ratio_with_a_bad_response_meets_no_target() -> None:
    runs = [result("accord-jsonrpc", 5000), result("sdk-db-jsonrpc", 10, bad=1)]
    found = ratio(runs, "send", 1000, 8, "accord-jsonrpc", "sdk-db-jsonrpc")
    assert found is not None and found.value == 500 and not found.meets(10.0)
    assert "INVALID" in like_for_like(runs, 1000)


def test_the_like_for_like_table_says_met_or_not_per_pairing() -> None:
    runs = [
        result("accord-jsonrpc", 2000), result("sdk-db-jsonrpc", 30),
        result("accord-mem-jsonrpc", 3000), result("sdk-jsonrpc", 400),
        result("accord-jsonrpc", 30000, scenario="get"),
        result("sdk-db-jsonrpc", 500, scenario="get"),
    ]  # fmt: skip
    lines = like_for_like(runs, 1000).splitlines()
    send = next(line for line in lines if line.startswith("| SendMessage | 8 "))
    assert "66.7x" in send and "≥ 10x: **met**" in send  # durable
    assert "7.5x" in send and "≥ 10x: not met" in send  # memory
    get = next(line for line in lines if line.startswith("| GetTask | 8 "))
    assert "60.0x" in get and get.rstrip(" |").endswith("-")  # no memory pair measured
    assert not any(line.startswith("| SendStreamingMessage") for line in lines)


def test_a_durable_send_is_weighed_against_the_echo_round_trip_plus_one_fsync() -> None:
    runs = [
        result("accord-jsonrpc", 2000, conns=1, p50_ms=0.40),
        result("accord-mem-jsonrpc", 4000, conns=1, p50_ms=0.20),
        result("asgi-echo", 9000, scenario="get", conns=1, p50_ms=0.11),
    ]
    gap = send_gap(runs, 1000, [80.0, 100.0, 90.0])
    assert gap is not None
    durable, memory, echo, fsync, over = gap
    assert (round(durable), round(memory or 0), round(echo), fsync) == (400, 200, 110, 90.0)
    assert round(over) == 400 - 110 - 90
    table = against_limit(runs, 1000, [90.0])
    assert "gap ≤ 100 µs: not met (gap +200 µs)" in table
    runs[0] = result("accord-jsonrpc", 2000, conns=1, p50_ms=0.25)
    assert "**met** (gap +50 µs)" in against_limit(runs, 1000, [90.0])


def test_get_task_is_held_to_its_share_of_the_echo_from_8_connections() -> None:
    runs = []
    for conns, ours in ((1, 5000), (8, 30000)):
        runs += [
            result("accord-jsonrpc", ours, scenario="get", conns=conns),
            result("accord-mem-jsonrpc", ours * 1.3, scenario="get", conns=conns),
            result("asgi-echo", 36000, scenario="get", conns=conns),
        ]
    lines = against_limit(runs, 1000, []).splitlines()
    assert "(information)" in next(line for line in lines if "| 1 |" in line)
    at_8 = next(line for line in lines if "| 8 |" in line)
    assert "83%" in at_8 and "SQLite **met**" in at_8
    assert "memory **met**" in at_8  # 108 %
    assert not any("fsync" in line for line in lines)  # no fsync timed: no SendMessage row


def test_the_latency_table_gives_each_servers_p50_p99_and_p99_9_beside_the_ratios() -> None:
    runs = []
    for repeat, p50 in enumerate((1.0, 3.0, 2.0)):
        runs += [result("accord-jsonrpc", 2000, p50_ms=p50, repeat=repeat)]
        runs += [result("sdk-jsonrpc", 100, p50_ms=p50 * 10, repeat=repeat)]
    for r in runs:
        r.p999_ms = r.p50_ms * 4
    lines = like_for_like_tails(runs, 1000).splitlines()
    [send] = [line for line in lines if line.startswith("| SendMessage | 8 ")]
    # the medians of the repeats: p50 2, p99 (2x) 4, p99.9 (4x) 8; columns: accord SQLite,
    # SDK SQLite, accord memory, SDK memory
    assert send == "| SendMessage | 8 | 2.00 / 4.00 / 8.00 | - | - | 20.00 / 40.00 / 80.00 |"
    assert not any(line.startswith("| GetTask") for line in lines)


def test_a_result_line_gives_the_recorded_percentiles_and_wrks_beside_them() -> None:
    line = {
        "requests": 1000, "duration_us": 500_000, "bad": 0, "socket_errors": 0,
        "connections": 1, "interval_us": 500, "recorded": 1000, "p50_us": 100,
        "p90_us": 150, "p99_us": 300, "p999_us": 900, "max_us": 40_000, "wrk_p50_us": 110,
        "wrk_p90_us": 2_000, "wrk_p99_us": 30_000, "wrk_p999_us": 39_000,
        "wrk_mean_us": 800.0,
    }  # fmt: skip
    r = load_result(line, "", scenario="get", stored=1000, target="accord-jsonrpc",
                    connections=1, repeat=0, cpu_seconds=0.05)  # fmt: skip
    assert (r.p50_ms, r.p99_ms, r.p999_ms) == (0.1, 0.3, 0.9)
    assert (r.wrk_p50_ms, r.wrk_p99_ms, r.wrk_p999_ms) == (0.11, 30.0, 39.0)
    assert (r.rps, r.cpu_us, r.max_ms) == (2000.0, 50.0, 40.0)
    assert tail(r) == "0.10 / 0.30 / 0.90 (wrk 30.00 / 39.00)"
    # a gRPC run (grpc_load.py) has no correction and no wrk column
    grpc = {k: v for k, v in line.items() if not k.startswith("wrk_")}
    del grpc["recorded"]
    r = load_result(grpc, "", scenario="get", stored=1000, target="accord-grpc",
                    connections=8, repeat=0, cpu_seconds=0.0)  # fmt: skip
    assert tail(r) == "0.10 / 0.30 / 0.90"


def test_the_latency_table_shows_wrks_corrected_tail_beside_the_recorded_one() -> None:
    runs = [result("accord-jsonrpc", 2000, p50_ms=1.0), result("sdk-jsonrpc", 100)]
    runs[0].p999_ms, runs[0].wrk_p99_ms, runs[0].wrk_p999_ms = 3.0, 40.0, 90.0
    [send] = [line for line in like_for_like_tails(runs, 1000).splitlines() if "| 8 |" in line]
    assert send.startswith("| SendMessage | 8 | 1.00 / 2.00 / 3.00 (wrk 40.00 / 90.00) | - |")
