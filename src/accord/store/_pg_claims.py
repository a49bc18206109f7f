"""Remote workers' claims in the PostgreSQL database (table ``remote_claims``, migration 2):
every node on the database sees and grants the same claims, and they survive a node's restart.

Each change is one statement, so it is atomic across nodes: a grant is an upsert whose
``DO UPDATE`` applies only when the current claim is free to take (expired, holder-less or the
same holder) and returns nothing otherwise; reapers take expired rows with
``FOR UPDATE SKIP LOCKED`` and give them a lease of their own, so each expired claim goes to
exactly one reaper. Times are the caller's clock (ms), never the server's: the engine's clock
decides leases, as with the in-process table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import asyncpg

from accord.store._claims import Claim, GrantOutcome

_COLUMNS = "task_id, tenant, holder, expires_ms, reaper"

# The upsert decides on the latest row version (it waits for a concurrent grant to commit).
# ``renewed`` tells the caller whether the holder had the claim already: RETURNING shows only
# new values, so the update records it. $4 is now, $5 the new lease end.
_GRANT = f"""
INSERT INTO remote_claims AS c (task_id, tenant, holder, expires_ms)
VALUES ($1, $2, $3, $5)
ON CONFLICT (task_id) DO UPDATE
    SET tenant = excluded.tenant, holder = excluded.holder, expires_ms = excluded.expires_ms,
        renewed = (c.holder = excluded.holder)
    WHERE c.reaper = '' AND (c.expires_ms <= $4 OR c.holder = '' OR c.holder = excluded.holder)
RETURNING {_COLUMNS}, renewed
"""

_TAKE_EXPIRED = f"""
UPDATE remote_claims SET reaper = $2, expires_ms = $3
WHERE task_id IN (
    SELECT task_id FROM remote_claims WHERE expires_ms <= $1
    ORDER BY expires_ms LIMIT $4 FOR UPDATE SKIP LOCKED
)
RETURNING {_COLUMNS}
"""


def _claim(row: asyncpg.Record) -> Claim:
    return Claim(row[0], row[1], row[2], row[3], row[4])


class PgClaimTable:
    """A :class:`accord.store._claims.ClaimTable` on the pool ``pool()`` returns (the store's,
    which exists once the store is open)."""

    def __init__(self, pool: Callable[[], asyncpg.Pool]) -> None:
        self._pool = pool

    async def grant(
        self, task_id: str, tenant: str, holder: str, now_ms: int, expires_ms: int
    ) -> tuple[GrantOutcome, Claim | None]:
        row = await self._pool().fetchrow(_GRANT, task_id, tenant, holder, now_ms, expires_ms)
        if row is None:
            current = await self._pool().fetchrow(
                f"SELECT {_COLUMNS} FROM remote_claims WHERE task_id = $1", task_id
            )
            return "held", _claim(current) if current is not None else None
        return ("renewed" if row["renewed"] else "claimed"), _claim(row)

    async def renew(self, task_id: str, expires_ms: int) -> None:
        await self._pool().execute(
            "UPDATE remote_claims SET expires_ms = $2 WHERE task_id = $1 AND reaper = ''",
            task_id,
            expires_ms,
        )

    async def release(self, task_id: str, lease_ends_by: int | None = None) -> None:
        if lease_ends_by is None:
            await self._pool().execute("DELETE FROM remote_claims WHERE task_id = $1", task_id)
            return
        await self._pool().execute(
            "DELETE FROM remote_claims WHERE task_id = $1 AND expires_ms <= $2",
            task_id,
            lease_ends_by,
        )

    async def holder(self, task_id: str) -> str | None:
        value = await self._pool().fetchval(
            "SELECT holder FROM remote_claims WHERE task_id = $1", task_id
        )
        return str(value) if value is not None else None

    async def adopt(self, claims: Sequence[Claim]) -> int:
        if not claims:
            return 0
        status = await self._pool().execute(
            "INSERT INTO remote_claims (task_id, tenant, holder, expires_ms)"
            " SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])"
            " ON CONFLICT (task_id) DO NOTHING",
            [c.task_id for c in claims],
            [c.tenant for c in claims],
            [c.holder for c in claims],
            [c.expires_ms for c in claims],
        )
        return int(status.rsplit(" ", 1)[-1])  # "INSERT 0 n"

    async def take_expired(
        self, now_ms: int, reaper: str, expires_ms: int, limit: int
    ) -> list[Claim]:
        rows = await self._pool().fetch(_TAKE_EXPIRED, now_ms, reaper, expires_ms, limit)
        return [_claim(row) for row in rows]

    async def reaped(self, claim: Claim) -> None:
        await self._pool().execute(
            "DELETE FROM remote_claims WHERE task_id = $1 AND reaper = $2",
            claim.task_id,
            claim.reaper,
        )

    def empty(self) -> bool:
        return False  # other nodes' claims are here too
