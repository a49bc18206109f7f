"""One load run's numbers, and the medians over repeats that the tables show."""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass
class Result:
    scenario: str
    stored: int
    target: str
    connections: int
    repeat: int
    rps: float
    p50_ms: float
    p99_ms: float
    mean_ms: float
    requests: int
    bad: int
    socket_errors: int
    cpu_us: float = 0.0  # server CPU time per request: robust to a busy machine
    sample: str = ""
    p999_ms: float = 0.0  # (0: a run that did not report it)
    max_ms: float = 0.0

    @property
    def valid(self) -> bool:
        return self.bad == 0 and self.socket_errors == 0 and self.requests > 0


TITLES = {
    "send": "SendMessage",
    "stream": "SendStreamingMessage",
    "get": "GetTask",
    "list": "ListTasks",
}


def medians(results: list[Result]) -> dict[tuple[str, int, str, int], Result]:
    """One Result per (scenario, stored, target, connections): the median repeat by req/s,
    with the latency medians of all repeats; INVALID if any repeat was."""
    groups: dict[tuple[str, int, str, int], list[Result]] = {}
    for r in results:
        if r.repeat >= 0:
            groups.setdefault((r.scenario, r.stored, r.target, r.connections), []).append(r)
    out = {}
    for key, rs in groups.items():
        out[key] = Result(
            scenario=key[0],
            stored=key[1],
            target=key[2],
            connections=key[3],
            repeat=len(rs),
            rps=statistics.median(r.rps for r in rs),
            p50_ms=statistics.median(r.p50_ms for r in rs),
            p99_ms=statistics.median(r.p99_ms for r in rs),
            mean_ms=statistics.median(r.mean_ms for r in rs),
            requests=sum(r.requests for r in rs),
            bad=sum(r.bad for r in rs),
            socket_errors=sum(r.socket_errors for r in rs),
            cpu_us=statistics.median(r.cpu_us for r in rs),
            p999_ms=statistics.median(r.p999_ms for r in rs),
            max_ms=max(r.max_ms for r in rs),
        )
    return out
