"""``GET /healthz`` (liveness) and ``GET /readyz`` (readiness) for orchestrators and load
balancers: unauthenticated, cheap, and saying nothing about any tenant's data.

``/healthz`` answers 200 while the process serves HTTP. ``/readyz`` answers 200 when the store
and the bus answer a round trip, else 503 naming the part that did not (the reason goes to the
server's log, not to the caller: it may name a database host). Concurrent probes share one
check, and a result is reused for ``cache_s``, so a flood of probes costs the database at most
one round trip per part per ``cache_s``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from accord.server._http import JSON, Send, respond
from accord.store import redact_url

log = logging.getLogger("accord.server")

LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
PATHS = frozenset({LIVENESS_PATH, READINESS_PATH})

_ALIVE = b'{"status":"ok"}'


class Health:
    def __init__(
        self,
        checks: dict[str, Callable[[], Awaitable[None]]],
        *,
        timeout_s: float = 2.0,
        cache_s: float = 1.0,
    ) -> None:
        self.checks = checks  # part name -> a round trip that raises when it fails
        self.timeout_s = timeout_s
        self.cache_s = cache_s
        self._last: tuple[float, list[str]] | None = None  # (when, failed parts)
        self._running: asyncio.Future[list[str]] | None = None

    async def handle(self, path: str, send: Send) -> None:
        failed = await self.failed_parts() if path == READINESS_PATH else []
        body = _ALIVE
        if failed:
            names = b",".join(b'"' + name.encode() + b'"' for name in failed)
            body = b'{"status":"unavailable","failed":[' + names + b"]}"
        await respond(send, 503 if failed else 200, body, JSON, [(b"cache-control", b"no-store")])

    async def failed_parts(self) -> list[str]:
        """The parts that failed their check, in order; [] when ready."""
        last = self._last
        if last is not None and time.monotonic() - last[0] < self.cache_s:
            return list(last[1])
        if self._running is None or self._running.done():
            self._running = asyncio.ensure_future(self._check_all())
        # Shielded: a probe that goes away does not cancel the check the others wait for.
        return list(await asyncio.shield(self._running))

    async def _check_all(self) -> list[str]:
        results = await asyncio.gather(*(self._check(n, c) for n, c in self.checks.items()))
        failed = [name for name, ok in zip(self.checks, results, strict=True) if not ok]
        self._last = (time.monotonic(), failed)
        return failed

    async def _check(self, name: str, check: Callable[[], Awaitable[None]]) -> bool:
        try:
            await asyncio.wait_for(check(), self.timeout_s)
        except TimeoutError:
            log.warning("readiness: the %s did not answer within %g s", name, self.timeout_s)
            return False
        except Exception as exc:
            log.warning("readiness: the %s failed: %s", name, redact_url(str(exc)))
            return False
        return True
