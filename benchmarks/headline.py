"""The headline tables of benchmarks/run.py: accord against the a2a-sdk like for like, and
accord against the limit of its own HTTP stack and disk.

Like for like: accord on SQLite against the SDK on its SQLite store (``durable``), accord in
memory against the SDK in memory (``memory``); each ratio is of the medians over the repeats,
with the range of the per-repeat ratios (the two servers of a repeat run seconds apart).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from load_results import TITLES, Result, medians, tail

# Targets (issue 30): accord's requests per second over the SDK's, in both pairings.
TARGETS = {"send": 10.0, "stream": 10.0, "get": 5.0}
PAIRINGS = (
    ("durable", "accord-jsonrpc", "sdk-db-jsonrpc"),
    ("memory", "accord-mem-jsonrpc", "sdk-jsonrpc"),
)
ECHO = "asgi-echo"  # the bare echo on accord's HTTP server
GET_SHARE_OF_ECHO = 0.80  # GetTask against the echo, at 8 and more connections
SEND_GAP_US = 100.0  # a durable SendMessage at 1 connection over echo round trip + fsync


@dataclass(frozen=True)
class Ratio:
    ours: Result  # medians over the repeats
    theirs: Result
    per_repeat: tuple[float, ...]

    @property
    def value(self) -> float:
        return self.ours.rps / self.theirs.rps if self.theirs.rps else 0.0

    @property
    def valid(self) -> bool:
        return self.ours.valid and self.theirs.valid

    def meets(self, target: float) -> bool:
        return self.valid and self.value >= target


def ratio(
    results: Sequence[Result], scenario: str, stored: int, connections: int, ours: str, theirs: str
) -> Ratio | None:
    """``ours`` over ``theirs`` in requests per second; None unless both were measured."""
    m = medians(list(results))
    a = m.get((scenario, stored, ours, connections))
    b = m.get((scenario, stored, theirs, connections))
    if a is None or b is None:
        return None
    by_repeat: dict[int, dict[str, float]] = {}
    for r in results:
        key = (r.scenario, r.stored, r.connections)
        if r.repeat >= 0 and key == (scenario, stored, connections) and r.target in (ours, theirs):
            by_repeat.setdefault(r.repeat, {})[r.target] = r.rps
    per_repeat = tuple(
        pair[ours] / pair[theirs]
        for _, pair in sorted(by_repeat.items())
        if ours in pair and pair.get(theirs)
    )
    return Ratio(a, b, per_repeat)


def _rps(r: Result) -> str:
    return f"{r.rps:,.0f}" if r.valid else f"{r.rps:,.0f} INVALID"


def _ratio_cells(found: Ratio | None, target: float) -> list[str]:
    if found is None:
        return ["-", "-", "-", "-"]
    spread = ""
    if len(found.per_repeat) > 1:
        spread = f" ({min(found.per_repeat):.1f}-{max(found.per_repeat):.1f})"
    verdict = "**met**" if found.meets(target) else "not met"
    return [_rps(found.ours), _rps(found.theirs), f"{found.value:.1f}x{spread}", verdict]


def like_for_like(results: Sequence[Result], stored: int) -> str:
    lines = [
        "| operation | conns | accord SQLite req/s | SDK SQLite req/s | ratio (per repeat) "
        "| target | accord memory req/s | SDK memory req/s | ratio (per repeat) | target |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for scenario, target in TARGETS.items():
        for conns in sorted({r.connections for r in results if r.scenario == scenario}):
            cells = [TITLES[scenario], str(conns)]
            for _, ours, theirs in PAIRINGS:
                found = ratio(results, scenario, stored, conns, ours, theirs)
                parts = _ratio_cells(found, target)
                parts[3] = f"≥ {target:g}x: {parts[3]}" if found else "-"
                cells += parts
            if any(cell != "-" for cell in cells[2:]):
                lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def like_for_like_tails(results: Sequence[Result], stored: int) -> str:
    """Latency beside the like-for-like ratios: p50 / p99 / p99.9 of the requests as
    recorded, then wrk's corrected p99 / p99.9 in brackets (medians over the repeats), of
    each server of both pairings."""
    m = medians(list(results))
    servers = [name for _, ours, theirs in PAIRINGS for name in (ours, theirs)]
    lines = [
        "| operation | conns | accord SQLite p50 / p99 / p99.9 ms (wrk p99 / p99.9) | SDK SQLite "
        "| accord memory | SDK memory |",
        "|---|---:|---|---|---|---|",
    ]
    for scenario in TARGETS:
        for conns in sorted({r.connections for r in results if r.scenario == scenario}):
            cells = [tail(m.get((scenario, stored, name, conns))) for name in servers]
            if any(cell != "-" for cell in cells):
                lines.append(f"| {TITLES[scenario]} | {conns} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def against_limit(results: Sequence[Result], stored: int, fsync_us: Sequence[float]) -> str:
    """GetTask against the bare echo on accord's HTTP server; a durable SendMessage at 1
    connection against the echo's round trip plus one fsync of the stores' disk."""
    lines = [
        "| measure | conns | accord SQLite | accord memory | limit | target |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for conns in sorted({r.connections for r in results if r.scenario == "get"}):
        cells = []
        for ours in ("accord-jsonrpc", "accord-mem-jsonrpc"):
            found = ratio(results, "get", stored, conns, ours, ECHO)
            cells.append(found)
        if not any(cells):
            continue
        shown = [
            f"{_rps(c.ours)} req/s = {c.value:.0%} (per repeat "
            f"{min(c.per_repeat):.0%}-{max(c.per_repeat):.0%})"
            if c and c.per_repeat
            else "-"
            for c in cells
        ]
        echo = next(c.theirs for c in cells if c)
        if conns >= 8:
            verdict = ", ".join(
                f"{name} {'**met**' if c and c.meets(GET_SHARE_OF_ECHO) else 'not met'}"
                for name, c in zip(("SQLite", "memory"), cells, strict=True)
            )
            target = f"≥ {GET_SHARE_OF_ECHO:.0%}: {verdict}"
        else:
            target = "(information)"
        lines.append(
            f"| GetTask / bare echo | {conns} | {shown[0]} | {shown[1]} "
            f"| echo {_rps(echo)} req/s | {target} |"
        )
    gap = send_gap(results, stored, fsync_us)
    if gap is not None:
        durable, memory, echo_us, fsync, over = gap
        verdict = "**met**" if over <= SEND_GAP_US else "not met"
        memory_text = f"p50 {memory:.0f} µs" if memory is not None else "-"
        lines.append(
            f"| SendMessage p50 / echo round trip + one fsync | 1 | p50 {durable:.0f} µs "
            f"| {memory_text} | {echo_us:.0f} + {fsync:.0f} = {echo_us + fsync:.0f} µs "
            f"| gap ≤ {SEND_GAP_US:.0f} µs: {verdict} (gap {over:+.0f} µs) |"
        )
    return "\n".join(lines)


def send_gap(
    results: Sequence[Result], stored: int, fsync_us: Sequence[float]
) -> tuple[float, float | None, float, float, float] | None:
    """(durable SendMessage p50, in-memory SendMessage p50, echo p50, fsync, gap), all in µs
    at 1 connection: the gap is the SendMessage over the echo's round trip plus one fsync."""
    m = medians(list(results))
    durable = m.get(("send", stored, "accord-jsonrpc", 1))
    memory = m.get(("send", stored, "accord-mem-jsonrpc", 1))
    echo = m.get(("get", stored, ECHO, 1))
    if durable is None or echo is None or not fsync_us:
        return None
    fsync = statistics.median(fsync_us)
    limit = echo.p50_ms * 1000 + fsync
    return (
        durable.p50_ms * 1000,
        memory.p50_ms * 1000 if memory else None,
        echo.p50_ms * 1000,
        fsync,
        durable.p50_ms * 1000 - limit,
    )
