"""A loopback TCP proxy in front of a server (PostgreSQL, say) that the test takes down and
brings back: down, every connection through it is cut and a new one is closed as soon as it
is accepted, as when the server's machine or the network between goes away; up, it forwards
again."""

from __future__ import annotations

import asyncio
import contextlib
import threading

from tests.loopback_proxy import LoopbackProxy


class OutageProxy(LoopbackProxy):
    def __init__(self, upstream_port: int) -> None:
        super().__init__()
        self._upstream_port = upstream_port
        self.is_down = False
        self._open: set[asyncio.StreamWriter] = set()

    def upstream_port(self) -> int:
        return self._upstream_port

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.is_down:
            writer.transport.abort()
            return
        self._open.add(writer)
        try:
            await super()._handle(reader, writer)
        finally:
            self._open.discard(writer)

    def down(self) -> None:
        """Cut every connection and refuse new ones (returns once they are cut)."""
        done = threading.Event()

        def cut() -> None:
            self.is_down = True
            for writer in list(self._open):
                with contextlib.suppress(Exception):
                    writer.transport.abort()
            done.set()

        self._loop.call_soon_threadsafe(cut)
        done.wait(10)

    def up(self) -> None:
        self.is_down = False
