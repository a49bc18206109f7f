"""One load run's numbers, and the medians over repeats that the tables show.

Latency comes in two kinds (benchmarks/lua.py): ``p50_ms`` … ``p999_ms`` of the requests as
recorded, which the targets are judged on, and ``wrk_p50_ms`` … ``wrk_p999_ms``, wrk's own
after its coordinated-omission correction, shown beside them (0: a load generator that
does not correct, such as benchmarks/grpc_load.py).
"""

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
    p50_ms: float  # as recorded: one sample per request
    p99_ms: float
    mean_ms: float  # as recorded (0: not reported; wrk's scripts give wrk's mean only)
    requests: int
    bad: int
    socket_errors: int
    cpu_us: float = 0.0  # server CPU time per request: robust to a busy machine
    sample: str = ""
    p999_ms: float = 0.0  # (0: a run that did not report it)
    max_ms: float = 0.0
    wrk_p50_ms: float = 0.0  # wrk's, corrected for coordinated omission (0: not wrk)
    wrk_p99_ms: float = 0.0
    wrk_p999_ms: float = 0.0
    wrk_mean_ms: float = 0.0

    @property
    def valid(self) -> bool:
        return self.bad == 0 and self.socket_errors == 0 and self.requests > 0


def load_result(
    data: dict[str, float],
    sample: str,
    *,
    scenario: str,
    stored: int,
    target: str,
    connections: int,
    repeat: int,
    cpu_seconds: float,
) -> Result:
    """A run's ``RESULT`` line (benchmarks/lua.py's done() or grpc_load.py) as a Result.

    Raises ValueError when the recorded histogram lua.py recovered from wrk's does not hold
    the run's requests (a run without socket errors records every request): its percentiles
    would be of something else."""
    requests = int(data["requests"])
    errors = int(data["socket_errors"])
    if "recorded" in data and int(data["recorded"]) != requests and errors == 0:
        raise ValueError(
            f"the recorded histogram holds {int(data['recorded'])} requests of {requests}"
            f" (interval {data.get('interval_us')} µs, {data.get('connections')} connections):"
            " the recovery from wrk's corrected histogram is wrong"
        )
    if "recorded" in data and int(data.get("connections", 0)) != connections:
        raise ValueError(f"the script was made for {data.get('connections')} connections,"
                         f" wrk ran {connections}")  # fmt: skip
    return Result(
        scenario=scenario,
        stored=stored,
        target=target,
        connections=connections,
        repeat=repeat,
        rps=requests / (data["duration_us"] / 1e6),
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        mean_ms=data.get("mean_us", 0) / 1000,
        requests=requests,
        bad=int(data["bad"]),
        socket_errors=errors,
        cpu_us=cpu_seconds * 1e6 / max(requests, 1),
        sample=sample,
        p999_ms=data.get("p999_us", 0) / 1000,
        max_ms=data.get("max_us", 0) / 1000,
        wrk_p50_ms=data.get("wrk_p50_us", 0) / 1000,
        wrk_p99_ms=data.get("wrk_p99_us", 0) / 1000,
        wrk_p999_ms=data.get("wrk_p999_us", 0) / 1000,
        wrk_mean_ms=data.get("wrk_mean_us", 0) / 1000,
    )


def tail(r: Result | None) -> str:
    """``p50 / p99 / p99.9`` ms as recorded, then wrk's corrected p99 / p99.9 in brackets."""
    if r is None:
        return "-"
    text = f"{r.p50_ms:.2f} / {r.p99_ms:.2f} / {r.p999_ms:.2f}"
    if r.wrk_p99_ms:
        text += f" (wrk {r.wrk_p99_ms:.2f} / {r.wrk_p999_ms:.2f})"
    return text


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
            wrk_p50_ms=statistics.median(r.wrk_p50_ms for r in rs),
            wrk_p99_ms=statistics.median(r.wrk_p99_ms for r in rs),
            wrk_p999_ms=statistics.median(r.wrk_p999_ms for r in rs),
            wrk_mean_ms=statistics.median(r.wrk_mean_ms for r in rs),
        )
    return out
