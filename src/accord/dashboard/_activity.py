"""The Activity page's data: the last hour of this server's own metrics
(accord.telemetry.ActivityHistory samples them every 10 s), once as JSON or as a stream —
the document, then each new point as the sampler closes it."""

from __future__ import annotations

from collections.abc import AsyncIterator

from accord.telemetry import ActivityHistory
from accord.wire import encode


async def frames(history: ActivityHistory, heartbeat_s: float) -> AsyncIterator[bytes]:
    """``event: activity`` (the whole window), then ``event: point`` for each sample taken;
    keep-alives in between when a sample is further off than the heartbeat."""
    yield b"event: activity\ndata: " + encode(history.document()) + b"\n\n"
    while True:
        if not await history.next_sample(heartbeat_s):
            yield b": keep-alive\n\n"
            continue
        latest = history.latest()
        if latest is not None:
            yield b"event: point\ndata: " + encode(latest) + b"\n\n"
