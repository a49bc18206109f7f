"""The durable-worker building block on a fake clock: claims by doorbell and poll, leases that
run out, the backoff schedule, giving up, the bound on jobs running at once, and a stop while
jobs run. The outbox here is a list in memory with the leases a store's claim takes."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from tests.fake_clock import FakeClock, settle, until

from accord.push._worker import DurableWorker, Failure, Scope, WorkerSettings, backoff_s

SETTINGS = WorkerSettings(
    lease_ms=30_000,
    max_attempts=5,
    retry_base_s=1.0,
    retry_max_s=5.0,
    poll_interval_s=10.0,
    max_running=8,
)


@dataclass
class Row:
    """A job as the outbox stores it."""

    name: str
    scope: str | None = None
    due_ms: int = 0  # not claimable before (a lease, or a retry)
    failures: int = 0
    state: str = "pending"  # pending, done, failing


@dataclass
class Outbox:
    """Fake jobs: what each attempt does is ``outcomes[name]`` in turn (a Failure, None for
    success, an exception to raise, or "wait": until ``gates[name]`` opens)."""

    clock: FakeClock
    chained: bool = False
    rows: dict[str, Row] = field(default_factory=dict)
    outcomes: dict[str, list[object]] = field(default_factory=dict)
    gates: dict[str, asyncio.Event] = field(default_factory=dict)
    attempts: list[tuple[str, int]] = field(default_factory=list)  # (name, at ms)
    claims: list[tuple[int, Scope]] = field(default_factory=list)  # (limit, scope)
    retries: list[tuple[str, int, float, int]] = field(default_factory=list)
    given_up: list[tuple[str, int, str]] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    resumed_from: list[tuple[str, str]] = field(default_factory=list)
    running: int = 0
    most_running: int = 0

    def add(self, name: str, scope: str | None = None, *outcomes: object) -> None:
        self.rows[name] = Row(name, scope, due_ms=self.clock())
        self.outcomes[name] = list(outcomes)

    def key(self, job: Row) -> str:
        return job.name

    def scope(self, job: Row) -> Scope:
        return job.scope

    def failures(self, job: Row) -> int:
        return job.failures

    async def claim(self, now_ms: int, lease_ms: int, limit: int, scope: Scope) -> list[Row]:
        self.claims.append((limit, scope))
        due = sorted(
            (
                row
                for row in self.rows.values()
                if row.state == "pending"
                and row.due_ms <= now_ms
                and (scope is None or row.scope == scope)
            ),
            key=lambda row: (row.due_ms, row.name),
        )[:limit]
        for row in due:
            row.due_ms = now_ms + lease_ms
        return [dataclasses.replace(row) for row in due]

    async def run(self, job: Row) -> Failure | None:
        self.attempts.append((job.name, self.clock()))
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            outcomes = self.outcomes[job.name]
            outcome = outcomes.pop(0) if outcomes else None
            if outcome == "wait":
                try:
                    await self.gates.setdefault(job.name, asyncio.Event()).wait()
                except asyncio.CancelledError:
                    self.cancelled.append(job.name)
                    raise
                outcome = outcomes.pop(0) if outcomes else None
            if isinstance(outcome, Exception):
                raise outcome
            if isinstance(outcome, Failure):
                return outcome
            self.rows[job.name].state = "done"
            return None
        finally:
            self.running -= 1

    async def retry(
        self, job: Row, failures: int, failure: Failure, delay_s: float, at_ms: int
    ) -> None:
        self.retries.append((job.name, failures, delay_s, at_ms))
        row = self.rows[job.name]
        row.failures, row.due_ms = failures, at_ms

    async def give_up(self, job: Row, failures: int, failure: Failure) -> None:
        self.given_up.append((job.name, failures, failure.error))
        row = self.rows[job.name]
        row.failures, row.state = failures, "failing"

    async def release(self, job: Row) -> None:
        self.released.append(job.name)
        self.rows[job.name].due_ms = 0

    def resumed(self, claimed: Row, previous: Row) -> Row:
        self.resumed_from.append((claimed.name, previous.name))
        return claimed


@asynccontextmanager
async def working(
    outbox: Outbox, settings: WorkerSettings = SETTINGS, jitter: float = 1.0
) -> AsyncIterator[DurableWorker[Row]]:
    worker = DurableWorker(
        outbox,
        settings,
        name="test work",
        log=logging.getLogger("tests.worker"),
        clock=outbox.clock,
        sleep=outbox.clock.sleep,
        jitter=lambda: jitter,
    )
    await worker.start()
    await settle()
    try:
        yield worker
    finally:
        await worker.stop()


def ran(outbox: Outbox, name: str) -> list[int]:
    """When ``name`` was attempted, in ms after the clock's start."""
    return [at - 1_000_000 for who, at in outbox.attempts if who == name]


def test_the_backoff_doubles_from_its_base_up_to_its_cap_scaled_by_the_jitter() -> None:
    assert [backoff_s(n, 1.0, 5.0, 1.0) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert [backoff_s(n, 1.0, 5.0, 0.0) for n in range(1, 5)] == [0.5, 1.0, 2.0, 2.5]
    assert backoff_s(3, 0.5, 300.0, 0.5) == pytest.approx(2.0 * 0.75)


async def test_what_is_due_is_claimed_on_start_then_when_rung_or_polled() -> None:
    outbox = Outbox(FakeClock())
    outbox.add("left-by-a-crash")
    async with working(outbox) as worker:
        assert ran(outbox, "left-by-a-crash") == [0]
        outbox.add("rung")
        worker.ring()
        await settle()
        assert ran(outbox, "rung") == [0]  # at once: no time passed
        outbox.add("unannounced")
        await outbox.clock.advance(9.9)
        assert ran(outbox, "unannounced") == []
        await outbox.clock.advance(0.1)  # the poll
        assert ran(outbox, "unannounced") == [10_000]


async def test_a_scope_is_claimed_alone_and_a_ring_while_its_job_runs_claims_it_again() -> None:
    outbox = Outbox(FakeClock())
    async with working(outbox) as worker:
        outbox.add("a1", "task-a", "wait")
        outbox.add("b1", "task-b")
        worker.ring("task-a")
        await settle()
        assert ran(outbox, "a1") == [0] and ran(outbox, "b1") == []  # (b's scope not rung)
        assert outbox.claims[-1] == (8, "task-a")  # (as much as there is room for)
        outbox.add("a2", "task-a")
        worker.ring("task-a")  # while a1 runs: a2 is claimed now, and task-a again after a1
        await settle()
        assert ran(outbox, "a2") == [0]
        claims = len(outbox.claims)
        outbox.gates["a1"].set()
        await settle()
        assert [scope for _, scope in outbox.claims[claims:]] == ["task-a"]


async def test_a_job_claimed_again_while_its_run_ends_runs_right_after_it() -> None:
    outbox = Outbox(FakeClock())
    async with working(outbox) as worker:
        outbox.add("job", "t", "wait")
        worker.ring("t")
        await settle()
        outbox.rows["job"].due_ms = 0  # (given back while its run is still ending)
        worker.ring("t")
        await settle()
        assert ran(outbox, "job") == [0]  # not twice at once
        outbox.gates["job"].set()
        await settle()
        assert outbox.resumed_from == [("job", "job")] and ran(outbox, "job") == [0, 0]


async def test_failures_are_retried_on_the_backoff_schedule_then_given_up() -> None:
    outbox = Outbox(FakeClock())
    outbox.add("flaky", None, *[Failure("HTTP 503")] * 10)
    async with working(outbox):
        for _ in range(12):
            await outbox.clock.advance(0.5)
        await outbox.clock.advance(3600)
    # Attempt n+1 follows attempt n after 1, 2, 4, 5, 5 s (capped), a little late, never early.
    assert [(n, f, d) for n, f, d, _ in outbox.retries] == [
        ("flaky", 1, 1.0),
        ("flaky", 2, 2.0),
        ("flaky", 3, 4.0),
        ("flaky", 4, 5.0),
    ]
    times = ran(outbox, "flaky")
    assert len(times) == 5  # max_attempts, then never again
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert [round(gap / 1000) for gap in gaps] == [1, 2, 4, 5]
    assert all(gap >= want * 1000 for gap, want in zip(gaps, (1, 2, 4, 5), strict=True))
    assert [at - 1_000_000 for _, _, _, at in outbox.retries] == [
        times[0] + 1000,
        times[1] + 2000,
        times[2] + 4000,
        times[3] + 5000,
    ]
    assert outbox.given_up == [("flaky", 5, "HTTP 503")]


async def test_a_retry_waits_for_its_time_whatever_rings_meanwhile() -> None:
    outbox = Outbox(FakeClock())
    outbox.add("flaky", None, Failure("down"))
    async with working(outbox, jitter=0.0) as worker:  # the first retry after 0.5 s
        await outbox.clock.advance(0.4)
        worker.ring()
        await settle()
        assert ran(outbox, "flaky") == [0]
        await outbox.clock.advance(0.2)
        assert ran(outbox, "flaky") == [0, 510]  # its timer: 0.5 s and a little
        assert outbox.rows["flaky"].state == "done"


async def test_a_permanent_failure_is_given_up_at_once() -> None:
    outbox = Outbox(FakeClock())
    outbox.add("refused", None, Failure("refused: a private address", permanent=True))
    async with working(outbox):
        await outbox.clock.advance(600)
    assert ran(outbox, "refused") == [0]
    assert outbox.given_up == [("refused", 1, "refused: a private address")]
    assert outbox.retries == []


async def test_a_lease_a_broken_run_left_is_claimed_again_once_it_runs_out() -> None:
    outbox = Outbox(FakeClock())
    outbox.add("breaks", None, RuntimeError("a bug"))
    async with working(outbox):
        assert ran(outbox, "breaks") == [0]
        await outbox.clock.advance(29.9)  # two polls inside the lease: not claimed
        assert ran(outbox, "breaks") == [0]
        await outbox.clock.advance(10)  # the first poll after the lease ran out
        assert ran(outbox, "breaks") == [0, 30_000]
        assert outbox.retries == [] and outbox.given_up == []  # (nothing recorded)


async def test_at_most_max_running_jobs_run_and_the_rest_start_as_room_frees() -> None:
    outbox = Outbox(FakeClock())
    for n in range(7):
        outbox.add(f"job{n}", None, "wait")
    settings = dataclasses.replace(SETTINGS, max_running=3)
    async with working(outbox, settings):
        assert outbox.running == 3
        assert [limit for limit, _ in outbox.claims] == [3]  # never claimed beyond the room
        for n in range(7):
            outbox.gates.setdefault(f"job{n}", asyncio.Event()).set()
            await settle()
        await until(lambda: all(row.state == "done" for row in outbox.rows.values()))
        assert outbox.most_running == 3
        assert outbox.clock() == 1_000_000  # room freed, no poll needed


async def test_a_chained_outbox_claims_again_after_each_job() -> None:
    outbox = Outbox(FakeClock(), chained=True)
    outbox.add("first", None, "wait")
    async with working(outbox):
        outbox.add("second")
        assert ran(outbox, "second") == []
        outbox.gates["first"].set()
        await settle()
        assert ran(outbox, "second") == [0]  # the first's end claimed it: no ring, no poll


async def test_stop_cancels_running_jobs_gives_their_claims_back_and_ends_the_timers() -> None:
    outbox = Outbox(FakeClock())
    outbox.add("busy-1", None, "wait")
    outbox.add("busy-2", None, "wait")
    outbox.add("retrying", None, Failure("down"))
    async with working(outbox) as worker:
        assert outbox.running == 2 and len(outbox.retries) == 1
        await worker.stop()
    assert sorted(outbox.cancelled) == ["busy-1", "busy-2"]
    assert sorted(outbox.released) == ["busy-1", "busy-2"]  # not the one waiting to retry
    assert outbox.clock.sleeping == 0  # no poll, no retry timer left
    worker.ring()
    await outbox.clock.advance(3600)
    assert len(outbox.attempts) == 3  # nothing ran after the stop
