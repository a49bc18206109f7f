"""Rate limits per principal: a token bucket for each caller, kept for the most recent
callers only (docs/server.md, "Rate limits").

A caller is its authenticated identity in its tenant — not the socket peer, which behind a
proxy is the proxy's for everyone — and an anonymous caller its peer's address (the only
thing that tells anonymous callers apart). Each bucket holds up to ``burst`` tokens and gains
``per_minute`` a minute; a call takes one, and a call that finds less than one is refused
with ResourceExhausted and the whole seconds until a token is there (``retry_after_s``: HTTP
429 with ``Retry-After`` on both HTTP bindings, gRPC ``RESOURCE_EXHAUSTED`` with
``RetryInfo``). Memory is bounded: past ``max_principals`` callers the least recently seen
one's bucket is dropped (it comes back full). The buckets are this process's: with several
nodes, each node limits on its own — unless the limiter is given the PostgreSQL store's
access (``rate_limit_shared``): then every node takes from one bucket per caller, a row of
the table ``rate_buckets`` (store extension ``rate_limits``) updated in one statement per
call, and rows of callers whose buckets have been full for a while are deleted now and then.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Collection

from accord.core import Caller
from accord.store import PostgresAccess, StoreExtension
from accord.wire import A2AError, ErrorKind


class _NoRows:
    """(The memory store's state of the extension: nothing; buckets are shared on PostgreSQL
    only.)"""

    def forget_tasks(self, task_ids: Collection[str]) -> None:
        return None


RATE_BUCKETS = StoreExtension(
    name="rate_limits",
    memory=_NoRows,
    postgresql=[
        (
            1,
            (
                "CREATE TABLE rate_buckets (key TEXT PRIMARY KEY, tokens DOUBLE PRECISION NOT"
                " NULL, at_ms BIGINT NOT NULL, taken BOOLEAN NOT NULL DEFAULT true)",
            ),
        )
    ],
)

# One statement: the bucket refilled up to now, a token taken if there is one. $1 key,
# $2 burst, $3 now (ms), $4 tokens a millisecond.
_TAKE = (
    "INSERT INTO rate_buckets AS b (key, tokens, at_ms) VALUES ($1, $2 - 1, $3)"
    " ON CONFLICT (key) DO UPDATE SET"
    " tokens = LEAST($2, b.tokens + GREATEST($3 - b.at_ms, 0) * $4)"
    " - CASE WHEN LEAST($2, b.tokens + GREATEST($3 - b.at_ms, 0) * $4) >= 1 THEN 1 ELSE 0 END,"
    " taken = LEAST($2, b.tokens + GREATEST($3 - b.at_ms, 0) * $4) >= 1,"
    " at_ms = GREATEST($3, b.at_ms)"
    " RETURNING taken, tokens"
)
# Buckets untouched for longer than it takes to fill one: full again, as if never seen.
_PRUNE = "DELETE FROM rate_buckets WHERE at_ms < $1"
PRUNE_EVERY_S = 60.0


class RateLimiter:
    __slots__ = (
        "_buckets",
        "_clock",
        "_per_s",
        "_pruned",
        "_shared",
        "burst",
        "max_principals",
        "per_minute",
    )

    def __init__(
        self,
        per_minute: float,
        burst: int | None = None,
        max_principals: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
        shared: PostgresAccess | None = None,
    ) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.per_minute = per_minute
        self._per_s = per_minute / 60.0
        self.burst = burst if burst is not None else max(1, math.ceil(per_minute))
        self.max_principals = max(1, max_principals)
        self._clock = clock
        self._shared = shared  # the PostgreSQL table every node takes from; None: this process
        self._pruned = 0.0
        # key -> [tokens, when they were counted], least recently used first
        self._buckets: OrderedDict[str, list[float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def wait_s(self, key: str) -> int:
        """Take a token from ``key``'s bucket: 0 when there was one, else the whole seconds
        (at least 1) until there will be (and nothing is taken)."""
        now = self._clock()
        buckets = self._buckets
        bucket = buckets.get(key)
        if bucket is None:
            bucket = buckets[key] = [float(self.burst), now]
            if len(buckets) > self.max_principals:
                buckets.popitem(last=False)
        else:
            buckets.move_to_end(key)
            bucket[0] = min(float(self.burst), bucket[0] + (now - bucket[1]) * self._per_s)
            bucket[1] = now
        if bucket[0] >= 1.0:
            bucket[0] -= 1.0
            return 0
        return max(1, math.ceil((1.0 - bucket[0]) / self._per_s))

    async def check(self, caller: Caller, peer: str = "") -> None:
        """ResourceExhausted (with ``retry_after_s``) when ``caller`` has no token left."""
        # The tenant's length first: no tenant and identity run together into another's.
        key = (
            f"p{len(caller.tenant)}:{caller.tenant}{caller.identity}"
            if caller.authenticated
            else f"a:{peer}"
        )
        wait = self.wait_s(key) if self._shared is None else await self._shared_wait_s(key)
        if wait:
            raise A2AError(
                ErrorKind.RESOURCE_EXHAUSTED,
                f"rate limit: {self.per_minute:g} requests a minute per caller"
                f" (bursts of {self.burst}); try again in {wait} s",
                {"limit": "rate_limit_per_minute"},
                retry_after_s=wait,
            )

    async def _shared_wait_s(self, key: str) -> int:
        """:meth:`wait_s` on the bucket every node shares (the wall clock: nodes' clocks)."""
        assert self._shared is not None
        pool = self._shared.pool
        now_ms = time.time_ns() // 1_000_000
        per_ms = self._per_s / 1000.0
        # A digest: a fixed size, and no byte of an identity that PostgreSQL's text refuses.
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        row = await pool.fetchrow(_TAKE, digest, float(self.burst), now_ms, per_ms)
        assert row is not None  # (an upsert returns its row)
        taken, tokens = row
        if self._clock() - self._pruned >= PRUNE_EVERY_S:
            self._pruned = self._clock()
            await pool.execute(_PRUNE, now_ms - int(self.burst / per_ms) - 1000)
        if taken:
            return 0
        return max(1, math.ceil((1.0 - float(tokens)) / self._per_s))
