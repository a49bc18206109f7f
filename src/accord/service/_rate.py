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
nodes, each node limits on its own.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

from accord.core import Caller
from accord.wire import A2AError, ErrorKind


class RateLimiter:
    __slots__ = ("_buckets", "_clock", "_per_s", "burst", "max_principals", "per_minute")

    def __init__(
        self,
        per_minute: float,
        burst: int | None = None,
        max_principals: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.per_minute = per_minute
        self._per_s = per_minute / 60.0
        self.burst = burst if burst is not None else max(1, math.ceil(per_minute))
        self.max_principals = max(1, max_principals)
        self._clock = clock
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

    def check(self, caller: Caller, peer: str = "") -> None:
        """ResourceExhausted (with ``retry_after_s``) when ``caller`` has no token left."""
        key = (
            f"{caller.tenant}\x00{caller.identity}"
            if caller.authenticated
            else f"\x00anonymous\x00{peer}"
        )
        wait = self.wait_s(key)
        if wait:
            raise A2AError(
                ErrorKind.RESOURCE_EXHAUSTED,
                f"rate limit: {self.per_minute:g} requests a minute per caller"
                f" (bursts of {self.burst}); try again in {wait} s",
                {"limit": "rate_limit_per_minute"},
                retry_after_s=wait,
            )
