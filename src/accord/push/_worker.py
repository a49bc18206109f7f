"""The durable-worker building block: work leased from a durable outbox and run until done.

Push delivery (:class:`accord.push.PushDispatcher`) and the harness's channel delivery drain
their outboxes with it. What differs between them — what a job is, how the outbox leases it
on each store, what one attempt does, what is recorded and logged — is theirs, behind
:class:`Jobs`; the machinery is this:

- **claiming**: due work is claimed from the outbox (``Jobs.claim``: a lease, so no other
  claimer — another worker, another node — takes it until it is given back or the lease runs
  out), never more than there is room for (at most ``max_running`` jobs run at once). What
  is claimed is decided by the **doorbell**: :meth:`DurableWorker.ring` with a scope (e.g. a
  task id: that task's work) or without one (everything due), rung by the owner when
  something commits, by the worker itself every ``poll_interval_s`` (a safety net: retries
  due, other nodes' work, leases a dead process left) and on start (what a crash left);
  what has no room waits until a job ends;
- **running**: each claimed job runs in a task of its own (``Jobs.run``: one attempt); a job
  claimed again while its previous run is still ending runs right after it
  (``Jobs.resumed``); a scope rung while one of its jobs ran is rung again once it ends, and
  so is the job's scope after every run when finishing a job can make the next of its scope
  due (``Jobs.chained``);
- **retrying**: a failed attempt (a :class:`Failure`) is recorded with a retry time after a
  capped exponential backoff with jitter (:func:`backoff_s`), and its scope is rung then;
  after ``max_attempts`` failures in a row, or at once for a permanent failure, the job is
  given up (``Jobs.give_up``);
- **stopping**: :meth:`DurableWorker.stop` cancels the claims, the timers and the running
  jobs, and gives back what the cancelled jobs held (``Jobs.release``).

Time is the injected ``clock`` (milliseconds) and ``sleep`` (the poll and retry timers), so
tests can run the worker on a fake clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

J = TypeVar("J")

Scope = str | None  # the work a ring asks to claim: one scope's (e.g. a task's), or all due

RETRY_LATE_S = 0.01  # a retry timer fires a little late rather than early (the claim wants
# the retry time reached)


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed attempt: why, in a line free of secrets (it is recorded and logged), and
    whether it is ``permanent`` (retrying as it is cannot help: the job is given up at once)."""

    error: str
    permanent: bool = False


class Retrying(Protocol):
    """The settings a worker's user keeps under these names (push's, channels')."""

    @property
    def lease_ms(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def retry_base_s(self) -> float: ...
    @property
    def retry_max_s(self) -> float: ...
    @property
    def poll_interval_s(self) -> float: ...


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    lease_ms: int  # how long a claim holds (longer than an attempt)
    max_attempts: int  # failures in a row before a job is given up
    retry_base_s: float  # the first retry after about this long, doubling each time …
    retry_max_s: float  # … up to this
    poll_interval_s: float  # claiming everything due, whatever the doorbell says
    max_running: int  # jobs running at once
    claim_page: int = 500  # jobs claimed at a time when everything due is claimed
    scope_limit: int = 100  # jobs claimed at a time for one scope

    @classmethod
    def of(cls, settings: Retrying, max_running: int) -> WorkerSettings:
        return cls(
            settings.lease_ms,
            settings.max_attempts,
            settings.retry_base_s,
            settings.retry_max_s,
            settings.poll_interval_s,
            max_running,
        )


def backoff_s(failures: int, base_s: float, max_s: float, jitter: float) -> float:
    """The wait before retrying after ``failures`` failures in a row: exponential from
    ``base_s``, capped at ``max_s``, times ``0.5 + 0.5 * jitter`` (``jitter`` in [0, 1]: a
    random draw, so that retries do not synchronise)."""
    ceiling = min(max_s, base_s * 2.0 ** (failures - 1))
    return ceiling * (0.5 + 0.5 * jitter)


def now_ms() -> int:
    """The wall clock in milliseconds (the default ``clock``)."""
    return time.time_ns() // 1_000_000


class Jobs(Protocol[J]):
    """What a :class:`DurableWorker` drains: an outbox of jobs and one attempt at a job."""

    @property
    def chained(self) -> bool:
        """Whether finishing a job can make the next of its scope due (the outbox orders
        them): then every run's end rings its scope."""
        ...

    def key(self, job: J) -> Hashable:
        """The job's identity: one run per key at a time."""
        ...

    def scope(self, job: J) -> Scope:
        """The scope whose ring claims the job (its retry rings it)."""
        ...

    def failures(self, job: J) -> int:
        """Failed attempts in a row before the one that just failed."""
        ...

    async def claim(self, now_ms: int, lease_ms: int, limit: int, scope: Scope) -> Sequence[J]:
        """Up to ``limit`` due jobs (of ``scope``; None: of any), each leased until
        ``now_ms + lease_ms`` in the same transaction."""
        ...

    async def run(self, job: J) -> Failure | None:
        """One attempt; None when there is nothing to retry (done, or gone). It records its
        own success; an exception it raises is logged and its lease left to run out."""
        ...

    async def retry(
        self, job: J, failures: int, failure: Failure, delay_s: float, at_ms: int
    ) -> None:
        """Record a failed attempt (the ``failures``-th in a row), due again in ``delay_s``:
        at ``at_ms``."""
        ...

    async def give_up(self, job: J, failures: int, failure: Failure) -> None:
        """Record that the job is given up after ``failures`` failures in a row."""
        ...

    async def release(self, job: J) -> None:
        """Give back the claim of a job whose run the worker's stop cancelled."""
        ...

    def resumed(self, claimed: J, previous: J) -> J:
        """The job to run for ``claimed``, claimed while ``previous`` (same key) was ending."""
        ...


@dataclass(slots=True)
class _Running(Generic[J]):
    job: J
    scope: Scope
    task: asyncio.Task[None] | None = None
    holding: bool = True  # its run has not returned: a stop gives its claim back
    rung: bool = False  # its scope was rung while it ran


class DurableWorker(Generic[J]):
    """Drains ``jobs`` (see the module's docstring); ``name`` names it in log lines."""

    def __init__(
        self,
        jobs: Jobs[J],
        settings: WorkerSettings,
        *,
        name: str,
        log: logging.Logger,
        clock: Callable[[], int] = now_ms,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.jobs = jobs
        self.settings = settings
        self.name = name
        self.log = log
        self.clock = clock
        self.sleep = sleep
        self.jitter = jitter
        self._running: dict[Hashable, _Running[J]] = {}
        self._by_scope: dict[Scope, set[Hashable]] = {}
        self._handoff: dict[Hashable, J] = {}  # claimed while its previous run was ending
        self._all = False  # everything due is wanted
        self._scopes: set[str] = set()  # … or these scopes' work
        self._doorbell = asyncio.Event()
        self._timers: dict[Hashable, asyncio.Task[None]] = {}
        self._loops: list[asyncio.Task[None]] = []
        self._started = False

    # --- life --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Claim what is due now (what a crash left), then as rung and polled."""
        self._started = True
        self.ring()
        self._loops = [
            asyncio.ensure_future(self._claim_loop()),
            asyncio.ensure_future(self._poll_loop()),
        ]

    async def stop(self) -> None:
        """Cancel the claims, the retry timers and the running jobs; give back the claims
        the cancelled jobs held."""
        self._started = False
        running = list(self._running.values())
        tasks = [*self._loops, *self._timers.values(), *(r.task for r in running if r.task)]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loops = []
        self._timers.clear()
        self._handoff.clear()
        for run in running:
            if run.holding:
                with contextlib.suppress(Exception):
                    await self.jobs.release(run.job)

    def ring(self, scope: Scope = None) -> None:
        """Claim the due work of ``scope`` (None: everything due) soon."""
        if not self._started:
            return
        if scope is None:
            self._all = True
        else:
            self._scopes.add(scope)
        for key in self._by_scope.get(scope, ()):
            self._running[key].rung = True
        self._doorbell.set()

    def active(self, scope: Scope) -> int:
        """How many jobs of ``scope`` are running."""
        return len(self._by_scope.get(scope, ()))

    @property
    def room(self) -> int:
        return self.settings.max_running - len(self._running)

    # --- claiming ----------------------------------------------------------------------------

    async def _poll_loop(self) -> None:
        while True:
            await self.sleep(self.settings.poll_interval_s)
            self.ring()

    async def _claim_loop(self) -> None:
        while True:
            await self._doorbell.wait()
            self._doorbell.clear()
            if self.room <= 0:
                continue  # what is wanted stays wanted: the next job's end rings again
            try:
                if self._all:
                    self._all = False
                    self._scopes.clear()  # (claiming everything due claims theirs too)
                    await self._claim_all()
                elif self._scopes:
                    await self._claim_scopes()
            except Exception:
                self.log.exception("%s: claiming failed (tried again when rung)", self.name)

    async def _claim_all(self) -> None:
        """Claim everything due, as far as there is room."""
        while (room := self.room) > 0:
            page = min(room, self.settings.claim_page)
            claimed = await self.jobs.claim(self.clock(), self.settings.lease_ms, page, None)
            for job in claimed:
                self._start(job)
            if len(claimed) < page:
                return
        self._all = True  # (no room left: the rest when a job ends)

    async def _claim_scopes(self) -> None:
        """Claim the wanted scopes' work: never more scopes than there is room for; the
        others wait for the next ring or a job's end."""
        room = self.room
        batch = sorted(self._scopes)[:room]
        self._scopes.difference_update(batch)
        limit = min(self.settings.scope_limit, room // len(batch))
        now = self.clock()
        results = await asyncio.gather(
            *(self.jobs.claim(now, self.settings.lease_ms, limit, scope) for scope in batch),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                self.log.error("%s: claiming failed: %s", self.name, result)
                continue
            for job in result:
                self._start(job)

    # --- running -------------------------------------------------------------------------------

    def _start(self, job: J) -> None:
        if not self._started:
            return
        key = self.jobs.key(job)
        if key in self._running:  # its run is ending right now: this one runs after it
            self._handoff[key] = job
            return
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        scope = self.jobs.scope(job)
        run = self._running[key] = _Running(job, scope)
        self._by_scope.setdefault(scope, set()).add(key)
        run.task = asyncio.ensure_future(self._run(key, run))

    async def _run(self, key: Hashable, run: _Running[J]) -> None:
        try:
            try:
                failure = await self.jobs.run(run.job)
            except asyncio.CancelledError:
                raise  # (a stop: it gives the claim back)
            except Exception:
                run.holding = False  # its lease runs out and a later claim takes it again
                self.log.exception("%s: %r broke", self.name, key)
                return
            run.holding = False
            if failure is not None:
                await self._failed(key, run.job, run.scope, failure)
        except Exception:
            self.log.exception("%s: recording the failure of %r failed", self.name, key)
        finally:
            del self._running[key]
            same = self._by_scope[run.scope]
            same.discard(key)
            if not same:
                del self._by_scope[run.scope]
            if self._started:
                self._ended(key, run)

    def _ended(self, key: Hashable, run: _Running[J]) -> None:
        handoff = self._handoff.pop(key, None)
        if handoff is not None:
            self._start(self.jobs.resumed(handoff, run.job))
        elif run.rung or self.jobs.chained:
            self.ring(run.scope)
        elif self._all or self._scopes:
            self._doorbell.set()  # (work that waited for room)

    async def _failed(self, key: Hashable, job: J, scope: Scope, failure: Failure) -> None:
        failures = self.jobs.failures(job) + 1
        settings = self.settings
        if failure.permanent or failures >= settings.max_attempts:
            await self.jobs.give_up(job, failures, failure)
            return
        delay_s = backoff_s(failures, settings.retry_base_s, settings.retry_max_s, self.jitter())
        at_ms = self.clock() + int(delay_s * 1000)
        await self.jobs.retry(job, failures, failure, delay_s, at_ms)
        if self._started:
            old = self._timers.pop(key, None)
            if old is not None:
                old.cancel()
            timer = self._timers[key] = asyncio.ensure_future(
                self._retry_due(key, scope, delay_s + RETRY_LATE_S)
            )
            timer.add_done_callback(lambda done: self._forget_timer(key, done))

    async def _retry_due(self, key: Hashable, scope: Scope, delay_s: float) -> None:
        await self.sleep(delay_s)
        self.ring(scope)

    def _forget_timer(self, key: Hashable, timer: asyncio.Task[None]) -> None:
        if self._timers.get(key) is timer:
            del self._timers[key]


__all__ = [
    "DurableWorker",
    "Failure",
    "Jobs",
    "Retrying",
    "Scope",
    "WorkerSettings",
    "backoff_s",
    "now_ms",
]
