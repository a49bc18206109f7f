"""Timeouts, resume policy and per-call options."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds; ``None`` means wait forever.

    ``request`` bounds each read of a unary call; ``stream_idle`` bounds the silence between two
    bytes of a stream, and is unbounded by default because agents may think for a long time
    (servers send keep-alive comments, which count as bytes).
    """

    connect: float | None = 10.0
    request: float | None = 300.0
    stream_idle: float | None = None


@dataclass(frozen=True, slots=True)
class ResumePolicy:
    """How a broken stream is resumed.

    A broken stream is retried up to ``max_attempts`` times in a row (the count starts again
    after a reconnection that delivers something new), waiting ``initial_delay`` seconds,
    doubled each time up to ``max_delay``. A server's SSE ``retry:`` value replaces the initial
    delay. ``max_attempts=0`` turns resumption off.
    """

    max_attempts: int = 5
    initial_delay: float = 0.2
    max_delay: float = 5.0

    def delay(self, attempt: int, server_retry_ms: int | None = None) -> float:
        base = server_retry_ms / 1000 if server_retry_ms is not None else self.initial_delay
        return float(min(self.max_delay, base * (2 ** max(0, attempt - 1))))


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a call that failed before an answer is sent again.

    A call whose connection failed (refused, or dropped before the answer), that a proxy
    answered 502 or 503, that the server said it cannot answer now (``UnavailableError``:
    HTTP 503, gRPC ``UNAVAILABLE``; its store cannot read or write), or that a rate limit
    refused saying when to come back (``ResourceExhaustedError`` or HTTP 429 with
    ``Retry-After`` / ``RetryInfo``) is sent again up to
    ``max_attempts`` times, waiting ``initial_delay`` seconds doubled each time up to
    ``max_delay``, or longer when the server asks for longer (``Retry-After``, or a gRPC
    ``RetryInfo``), but never longer than ``max_retry_after``: a server asking for more is
    not tried again (its error is raised). It is the same request: a message keeps its
    ``messageId`` and CancelTask and push-config changes carry one ``Idempotency-Key`` for
    all attempts, so a server that deduplicates (accord does) carries it out once.
    ``max_attempts=0`` turns retrying off.
    """

    max_attempts: int = 3
    initial_delay: float = 0.1
    max_delay: float = 2.0
    max_retry_after: float = 30.0

    def delay(self, attempt: int) -> float:
        return float(min(self.max_delay, self.initial_delay * (2 ** max(0, attempt - 1))))

    def wait(self, attempt: int, retry_after: float | None = None) -> float | None:
        """The seconds to wait before attempt ``attempt`` (1: the first one sent again),
        honouring the wait the server asked for; None when there is to be no such attempt."""
        if attempt > self.max_attempts:
            return None
        if retry_after is None:
            return self.delay(attempt)
        if retry_after > self.max_retry_after:
            return None
        return max(self.delay(attempt), retry_after)


@dataclass(frozen=True, slots=True)
class CallOptions:
    """Per-call additions: extra headers, extra extensions, a different timeout."""

    headers: Mapping[str, str] = field(default_factory=dict)
    extensions: Sequence[str] = ()
    timeout: float | None = None  # replaces Timeouts.request (unary) / stream_idle (streams)
