"""Runs the store failed: not abandoned, and back at work as soon as the store answers.

When the store fails (rather than refuses) an append of a task an agent runs here — a full
disk, a lost database connection — nothing of that append was acknowledged, and the run is
not given up:

1. **Held.** The append, and every later append of the task, is kept in order in the task's
   :class:`~accord.engine._live.Stall` instead of failing its callers; the agent's next
   command waits there, so a paused agent holds at most what it decided before. Clients
   following the task see nothing new (nothing new is durable); the run keeps its hold.
2. **Written again as soon as the store answers.** One worker probes the store with the
   append that has waited longest (every 50 ms at first, backing off to every 0.5 s), and
   the moment the store takes it, writes every held append of every task. The agents go on
   where they paused; nothing is repeated, nothing is lost. An append an earlier attempt had
   committed after all (its connection was lost during the commit) is recognised by its
   events and counts as written; one the store now refuses (another writer moved the task
   meanwhile: a cancel) fails as a refused append does.
3. **Past the bound** (``EngineConfig.store_outage_s``, 60 s by default) the held appends
   fail, the task's runs are stopped, and the task is *owed recovery*: as soon as the store
   answers again it is resumed (an agent with ``resume``, e.g. the harness, goes on from its
   journal) or failed with :data:`STORE_LOST_MESSAGE`, exactly as start-up recovery treats a
   task a dead process left running. A process that dies meanwhile leaves it to its
   successor's start-up recovery. So no task stays WORKING without a live run on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from accord.engine._live import LiveTask, PendingWrite, Stall
from accord.store import DuplicateRequest, LimitExceeded, SeqConflict, StoreError, TaskGone

if TYPE_CHECKING:
    from accord.engine._commits import Commits

log = logging.getLogger("accord.engine")

FIRST_DELAY_S = 0.05  # the first probe after a failure; then twice as long each time
MAX_DELAY_S = 0.5  # between probes while the store keeps failing
STORE_LOST_MESSAGE = (
    "accord could not store this task's progress for a while, so its agent was stopped and "
    "cannot resume it; send the request again."
)
# What the store answers to refuse an append: it answered, and retrying would not help.
REFUSALS = (SeqConflict, LimitExceeded, DuplicateRequest, TaskGone)

# Recovery of one task a run was stopped on: False while it cannot be decided yet (runs of
# it still finishing here); raises when the store fails.
Recover = Callable[[str, str], Awaitable[bool]]


class Outage:
    """The live tasks whose appends wait for the store, and the tasks owed recovery."""

    def __init__(
        self,
        commits: Commits,
        recover: Recover,
        spawn: Callable[[Awaitable[None]], object],
        bound_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._commits = commits
        self._recover = recover
        self._spawn = spawn
        self.bound_s = bound_s
        self._clock = clock
        self._stalled: dict[str, LiveTask] = {}  # oldest first (the probe)
        self._owed: dict[str, None] = {}  # task ids, oldest first
        self._working = False
        self.active = True  # False once the engine stops: failures then fail at once

    @property
    def stalled(self) -> int:
        """Live tasks whose appends wait for the store."""
        return len(self._stalled)

    @property
    def owed(self) -> int:
        """Tasks whose runs were stopped, waiting for the store to be recovered."""
        return len(self._owed)

    def takes(self, live: LiveTask, write: PendingWrite, error: BaseException) -> bool:
        """Whether ``write`` of ``live``, failed with ``error``, is held to be written again
        (True) rather than failed now. Every append of a task that already waits joins it
        (each one follows the one before)."""
        if not self.active or isinstance(error, asyncio.CancelledError):
            return False
        stall = live.stall
        if stall is None:
            if live.broken is not None or isinstance(error, REFUSALS):
                return False
            if not isinstance(error, Exception):
                return False
            stall = live.stall = Stall(since=self._clock(), error=error)
            self._stalled[live.task_id] = live
            log.warning(
                "append to task %s failed: %s; its run waits for the store (up to %g s)",
                live.task_id,
                error,
                self.bound_s,
            )
            self._start()
        stall.add(write)
        return True

    def owe(self, task_id: str) -> None:
        """Recover ``task_id`` as soon as the store answers (its runs were stopped)."""
        self._owed[task_id] = None
        self._start()

    def abandon(self, why: str) -> None:
        """The engine stops: every held append fails (none was acknowledged; the next
        start's recovery finds the tasks where the store left them)."""
        self.active = False
        for live in list(self._stalled.values()):
            self._end(live, StoreError(why))

    # --- the worker ------------------------------------------------------------------------

    def _start(self) -> None:
        if not self._working:
            self._working = True
            self._spawn(self._work())

    async def _work(self) -> None:
        delay = FIRST_DELAY_S
        try:
            while self._stalled or self._owed:
                await asyncio.sleep(delay)
                answered = await self._round()
                delay = FIRST_DELAY_S if answered else min(delay * 2, MAX_DELAY_S)
        finally:
            self._working = False

    async def _round(self) -> bool:
        """One probe, and everything once the store answers it: True if the store answered."""
        answered = False
        if self._stalled:
            task_id, live = next(iter(self._stalled.items()))
            answered = await self._rewrite(live)
            if answered:
                others = [other for other in self._stalled.values() if other is not live]
                await asyncio.gather(*(self._rewrite(other) for other in others))
            elif task_id in self._stalled:  # the next probe is another task's
                self._stalled[task_id] = self._stalled.pop(task_id)
        self._expire()
        if self._owed and (answered or not self._stalled):
            first = next(iter(self._owed))
            if await self._recover_owed(first):
                answered = True
                await asyncio.gather(*(self._recover_owed(t) for t in list(self._owed)))
            elif first in self._owed:  # the next probe is another task's
                self._owed[first] = self._owed.pop(first)
        return answered

    async def _rewrite(self, live: LiveTask) -> bool:
        """Write ``live``'s held appends, in order: True if the store answered."""
        stall = live.stall
        if stall is None:
            self._stalled.pop(live.task_id, None)
            return True
        answered = False
        while stall.writes:
            if live.sending:
                return answered  # an append on its way answers first (it may join)
            write = stall.writes[0]
            try:
                await self._commits.rewrite(write)
            except REFUSALS as refusal:
                self._end(live, refusal)
                return True
            except Exception as exc:
                stall.error = exc
                return answered
            answered = True
            if live.stall is not stall:  # ended meanwhile (the engine stopped)
                return True
            stall.writes.remove(write)
            self._commits.settle_held(write, live, None)
        if live.sending:
            return answered
        live.stall = None
        self._stalled.pop(live.task_id, None)
        stall.cleared.set()
        log.info(
            "task %s: the store took its writes again after %.1f s",
            live.task_id,
            self._clock() - stall.since,
        )
        return True

    def _end(self, live: LiveTask, error: BaseException) -> None:
        """The held appends fail with ``error`` (as they would have without the hold)."""
        stall = live.stall
        if stall is None:
            return
        live.stall = None
        self._stalled.pop(live.task_id, None)
        for write in stall.writes:
            self._commits.settle_held(write, live, error)
        stall.cleared.set()

    def _expire(self) -> None:
        """Give up the runs whose appends have waited past the bound."""
        now = self._clock()
        for live in list(self._stalled.values()):
            stall = live.stall
            if stall is None or now - stall.since < self.bound_s:
                continue
            log.error(
                "task %s: the store has not taken its writes for %g s (%s); its run is "
                "stopped, and the task is resumed or failed once the store answers",
                live.task_id,
                self.bound_s,
                stall.error,
            )
            error = StoreError(
                f"the store failed task {live.task_id!r}'s writes for {self.bound_s:g} s: "
                f"{stall.error}"
            )
            self._end(live, error)
            self._commits.stop_runs(live)
            self.owe(live.task_id)

    async def _recover_owed(self, task_id: str) -> bool:
        try:
            recovered = await self._recover(task_id, STORE_LOST_MESSAGE)
        except Exception as exc:
            log.debug("recovery of task %s waits for the store: %s", task_id, exc)
            return False
        if recovered:
            self._owed.pop(task_id, None)
        return recovered
