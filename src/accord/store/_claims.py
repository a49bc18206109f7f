"""Where remote workers' claims live: the ClaimTable protocol and its in-process table.

A claim is one row per task: its tenant, its holder (``""`` for a claim adopted after a
restart, which the first worker that asks takes) and when its lease ends (ms, the engine's
clock). The policy (who may claim, failing a task whose lease ran out) is
:class:`accord.engine._remote.Claims`; a table only stores rows and decides each change in one
step, so two claimers or two reapers never both win.

Reaping happens in two steps so that a reaper that dies half-way loses nothing:
:meth:`ClaimTable.take_expired` marks expired rows as taken by one reaper (with a fresh lease
of its own, during which nobody can claim them), the reaper fails the tasks, then
:meth:`ClaimTable.reaped` deletes the rows it still holds. A row whose reaper died expires
again and another reaper takes it (failing a task is idempotent).

- :class:`LocalClaimTable`: a dict, for one process (memory:// and SQLite stores);
- ``accord.store._pg_claims.PgClaimTable``: a table in the PostgreSQL database, shared by
  every node on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal, Protocol

GrantOutcome = Literal["claimed", "renewed", "held"]


@dataclasses.dataclass(frozen=True, slots=True)
class Claim:
    task_id: str
    tenant: str
    holder: str
    expires_ms: int
    reaper: str = ""  # the node failing the task after its lease ran out; "" while live


class ClaimTable(Protocol):
    async def grant(
        self, task_id: str, tenant: str, holder: str, now_ms: int, expires_ms: int
    ) -> tuple[GrantOutcome, Claim | None]:
        """Give the task to ``holder`` until ``expires_ms`` unless someone else holds a live
        claim: "claimed" (it was free, expired or holder-less), "renewed" (``holder`` had it)
        or "held" with the current claim (None if it vanished meanwhile). A claim being
        reaped is held. One atomic step."""
        ...

    async def renew(self, task_id: str, expires_ms: int) -> None:
        """Move the lease of a live (not reaped) claim, if the task has one."""
        ...

    async def release(self, task_id: str, lease_ends_by: int | None = None) -> None:
        """Forget the task's claim (its turn ended, or the task is gone). With
        ``lease_ends_by``, only a claim whose lease ends by then: a turn that ended at t
        releases the claims granted or renewed before t (their leases end by t + lease), not
        one a worker took after the turn ended (its lease ends later)."""
        ...

    async def holder(self, task_id: str) -> str | None:
        """Who holds the task ("" nobody yet), None if it has no claim."""
        ...

    async def adopt(self, claims: Sequence[Claim]) -> int:
        """Add these claims for tasks that have none; how many were added."""
        ...

    async def take_expired(
        self, now_ms: int, reaper: str, expires_ms: int, limit: int
    ) -> list[Claim]:
        """At most ``limit`` claims whose lease ended by ``now_ms``, now marked as taken by
        ``reaper`` until ``expires_ms`` (returned as they are after that). Concurrent reapers
        never get the same row."""
        ...

    async def reaped(self, claim: Claim) -> None:
        """Delete a row taken by :meth:`take_expired` if that reaper still holds it."""
        ...

    def empty(self) -> bool:
        """True when this process knows there is nothing to reap. Never for a table other
        processes write too (their claims expire there): the reaper then sweeps all the time
        instead of only while this process has claims."""
        ...


class LocalClaimTable:
    """Claims in a dict: one process, no persistence (after a restart, ``adopt``)."""

    def __init__(self) -> None:
        self._rows: dict[str, Claim] = {}

    async def grant(
        self, task_id: str, tenant: str, holder: str, now_ms: int, expires_ms: int
    ) -> tuple[GrantOutcome, Claim | None]:
        current = self._rows.get(task_id)
        if current is not None and (
            current.reaper or (current.expires_ms > now_ms and current.holder not in ("", holder))
        ):
            return "held", current
        outcome: GrantOutcome = (
            "renewed" if current is not None and current.holder == holder else "claimed"
        )
        claim = Claim(task_id, tenant, holder, expires_ms)
        self._rows[task_id] = claim
        return outcome, claim

    async def renew(self, task_id: str, expires_ms: int) -> None:
        current = self._rows.get(task_id)
        if current is not None and not current.reaper:
            self._rows[task_id] = dataclasses.replace(current, expires_ms=expires_ms)

    async def release(self, task_id: str, lease_ends_by: int | None = None) -> None:
        current = self._rows.get(task_id)
        if current is not None and (lease_ends_by is None or current.expires_ms <= lease_ends_by):
            del self._rows[task_id]

    async def holder(self, task_id: str) -> str | None:
        current = self._rows.get(task_id)
        return current.holder if current is not None else None

    async def adopt(self, claims: Sequence[Claim]) -> int:
        added = 0
        for claim in claims:
            if claim.task_id not in self._rows:
                self._rows[claim.task_id] = claim
                added += 1
        return added

    async def take_expired(
        self, now_ms: int, reaper: str, expires_ms: int, limit: int
    ) -> list[Claim]:
        taken: list[Claim] = []
        for claim in list(self._rows.values()):
            if len(taken) >= limit:
                break
            if claim.expires_ms <= now_ms:
                mine = dataclasses.replace(claim, reaper=reaper, expires_ms=expires_ms)
                self._rows[claim.task_id] = mine
                taken.append(mine)
        return taken

    async def reaped(self, claim: Claim) -> None:
        current = self._rows.get(claim.task_id)
        if current is not None and current.reaper == claim.reaper:
            del self._rows[claim.task_id]

    def empty(self) -> bool:
        return not self._rows
