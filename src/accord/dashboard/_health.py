"""The Health page: the store and the bus, recovery, push delivery, and the nodes of a
PostgreSQL cluster, as one JSON document (its data is accord.service._status's); and a stream
of it that sends a new one when anything in it changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from accord.dashboard._deliveries import webhook_row
from accord.server import Health
from accord.service import Backlog, Node, Reader, Recovery, Service, checks, status
from accord.wire import encode

REFRESH_S = 5.0  # the stream looks again this often, and after every commit it hears


class HealthReport:
    """Builds the Health document for one service."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.checks = Health(checks(service))

    async def document(self, reader: Reader) -> dict[str, Any]:
        found = await status(self.service, reader)  # (refused first: without the grant)
        failed = await self.checks.failed_parts()
        return {
            "store": {"kind": found.store, "ready": "store" not in failed},
            "bus": {"kind": found.bus, "ready": "bus" not in failed},
            "recovery": _recovery(found.recovery),
            "push": _push(found.push) if found.push is not None else {"enabled": False},
            "nodes": None if found.nodes is None else [_node(node) for node in found.nodes],
        }

    async def follow(self, reader: Reader, heartbeat_s: float) -> AsyncIterator[bytes]:
        """``event: health`` frames: the document now, then each time it changes (looked
        at every REFRESH_S and after commits); keep-alives in between. The first document
        is read here: a read refused is refused before the stream starts."""
        first = encode(await self.document(reader))
        return self._frames(reader, first, heartbeat_s)

    async def _frames(
        self, reader: Reader, body: bytes, heartbeat_s: float
    ) -> AsyncIterator[bytes]:
        hub = self.service.hub
        sent = b""
        idle = 0.0
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        while True:
            if body != sent:
                sent = body
                idle = 0.0
                yield b"event: health\ndata: " + body + b"\n\n"
            before = loop.time()
            await hub.wait(wake, REFRESH_S)
            if wake.is_set():
                await asyncio.sleep(0.5)  # a burst of commits makes one document
            idle += loop.time() - before
            if idle >= heartbeat_s:
                idle = 0.0
                yield b": keep-alive\n\n"
            wake.clear()
            body = encode(await self.document(reader))


def _recovery(recovery: Recovery) -> dict[str, Any]:
    if recovery.resumable:
        mode = "off: the agent resumes tasks left running"
    elif recovery.interval_s is not None:
        mode = f"at start, then every {recovery.interval_s:g} s"
        if recovery.watches_nodes:
            mode += " and as soon as another node dies"
    else:
        mode = "at start"
    return {
        "mode": mode,
        "sweeps": recovery.sweeps,
        "recovered": recovery.recovered,
        "unfinished": recovery.unfinished,
    }


def _node(node: Node) -> dict[str, Any]:
    return {
        "node": node.node,
        "address": node.address,
        "since": node.since.isoformat(),
        "this": node.this,
    }


def _push(backlog: Backlog) -> dict[str, Any]:
    return {
        "enabled": True,
        "outbox": backlog.outbox,
        "outboxAtLeast": backlog.outbox_at_least,
        "failing": [webhook_row(webhook) for webhook in backlog.failing],
        "moreFailing": backlog.more_failing,
    }
