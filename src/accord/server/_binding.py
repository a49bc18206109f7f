"""What every binding does before its operation runs: authenticate, negotiate the version and
extensions, and note where a stream resumes (all from the request's head, before a byte of
its body is read); then check the operation's grant (accord.core._grants)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, ClassVar

from accord.core import ANONYMOUS, OPEN, Caller, granted, required_actor
from accord.server._auth import Authenticator
from accord.server._card import BASE_URL_KEY
from accord.server._event_ids import event_number
from accord.server._http import Request, until_disconnected
from accord.service import Call, Operation, Service, negotiate
from accord.telemetry import RequestMetrics, RequestStats
from accord.wire import A2AError, ErrorKind, invalid_params


@dataclass
class Binding:
    service: Service
    auth: Authenticator
    require_auth: bool = True
    # Request metrics (accord.telemetry): None when metrics are off, and then nothing is timed.
    metrics: RequestMetrics | None = None
    json_out: ClassVar[bool] = True  # JSON-RPC and HTTP+JSON write JSON; gRPC says False
    name: ClassVar[str] = ""  # the binding's label in metrics

    def authenticate(self, request: Request) -> Caller:
        if not self.auth.configured:
            return OPEN
        caller = self.auth.authenticate(request.headers)
        if caller is not None:
            return caller
        if self.require_auth or _presented_credentials(request):
            raise A2AError(ErrorKind.UNAUTHENTICATED, "missing or invalid credentials")
        return ANONYMOUS

    def caller(self, request: Request) -> Caller:
        """Who asks: the authenticated caller, with the participant id it asserts (the
        ``X-Participant-Id`` header; an assertion only: the agent decides what it is worth)."""
        caller = self.authenticate(request)
        participant = request.headers.get("x-participant-id")
        if participant:
            caller = dataclasses.replace(caller, participant=participant)
        return caller

    def prepare(self, request: Request) -> Call:
        caller = self.caller(request)
        extensions = negotiate(
            self.service,
            request.service_parameter("a2a-version"),
            request.service_parameter("a2a-extensions"),
        )
        resume = _last_event_id(request.headers.get("last-event-id"))
        return Call(
            caller=caller,
            extensions=extensions,
            last_event_id=resume,
            json_out=self.json_out,
            # safe retries (accord.engine._retries); checked where it is used
            idempotency_key=request.headers.get("idempotency-key", ""),
            base_url=request.scope.get(BASE_URL_KEY, ""),
        )

    async def limit(self, caller: Caller, request: Request) -> None:
        """ResourceExhausted (with when to come back) when ``caller`` is past the server's
        rate limit (accord.service._rate); every binding calls it once the request's caller
        is known, before a byte of its body is read."""
        limiter = self.service.rate_limiter
        if limiter is not None:
            client = request.scope.get("client")
            peer = str(client[0]) if client else str(request.scope.get("peer", ""))
            await limiter.check(caller, peer)

    @staticmethod
    def authorize(caller: Caller, command: str) -> None:
        """PERMISSION_DENIED unless ``caller`` holds the actor ``command`` needs."""
        if granted(caller, command):
            return
        actor = required_actor(command)
        needs = f"the actor {actor}" if actor is not None else "a grant no actor holds"
        raise A2AError(ErrorKind.PERMISSION_DENIED, f"not granted: {command} needs {needs}")

    def observed(
        self, operation: Operation | None, call: Call | None, outcome: str, started: float
    ) -> RequestStats:
        """Count a request answered (``outcome``: ok, or its error's reason) and its latency
        since ``started`` (a ``perf_counter`` reading); only called with metrics on."""
        assert self.metrics is not None
        caller = call.caller if call is not None else None
        tenant = caller.tenant if caller is not None and caller.authenticated else ""
        method = operation.name if operation is not None else "unknown"
        stats = self.metrics.stats(self.name, method, tenant)
        stats.done(outcome, time.perf_counter() - started)
        return stats

    async def stream_out(
        self,
        request: Request,
        stream: Coroutine[Any, Any, None],
        operation: Operation,
        call: Call,
        started: float,
    ) -> None:
        """Write an HTTP stream until it ends or the client goes; with metrics on, counted
        as a request when it starts and as open while it runs."""
        if self.metrics is None:
            await until_disconnected(request.receive, stream)
            return
        stats = self.observed(operation, call, "ok", started)
        stats.streams += 1
        try:
            await until_disconnected(request.receive, stream)
        finally:
            stats.streams -= 1

    @staticmethod
    def response_headers(extensions: list[str]) -> list[tuple[bytes, bytes]]:
        if not extensions:
            return []
        return [(b"a2a-extensions", ",".join(extensions).encode())]


def _last_event_id(value: str | None) -> int | None:
    """Where a stream resumes: after the event numbered ``value`` (None: from the start)."""
    if not value or not value.strip():
        return None
    try:
        return event_number(value.strip())
    except ValueError as exc:
        raise invalid_params("Last-Event-ID", f"not an event id this server sent: {exc}") from None


def _presented_credentials(request: Request) -> bool:
    headers = request.headers
    return "authorization" in headers or "x-api-key" in headers
