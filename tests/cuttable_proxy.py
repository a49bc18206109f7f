"""A loopback TCP proxy to a server (PostgreSQL, in the tests) that a test can cut and
restore: cut, every connection through it is aborted and new ones are aborted as they come
(as if the server had stopped); restored, it passes everything again. Optionally it loses the
server's next answer that contains given bytes, cutting that connection: the server carried
the request out (a commit, say), the client never hears of it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from tests.loopback_proxy import LoopbackProxy


class CuttableProxy(LoopbackProxy):
    def __init__(self, upstream: int) -> None:
        super().__init__()
        self.upstream = upstream
        self.is_cut = False
        self.lose_answer_with: bytes | None = None  # the next answer containing this is lost
        self.lost = 0
        self._writers: set[asyncio.StreamWriter] = set()

    def dsn(self, dsn: str, upstream_address: str) -> str:
        """``dsn`` (which names ``upstream_address``, host:port) through this proxy."""
        assert upstream_address in dsn, dsn
        return dsn.replace(upstream_address, f"127.0.0.1:{self.port}", 1)

    def upstream_port(self) -> int:
        return self.upstream

    def answers(self) -> Callable[[bytes], tuple[bytes, bool]]:
        def answered(data: bytes) -> tuple[bytes, bool]:
            wanted = self.lose_answer_with
            if wanted is not None and wanted in data:
                self.lose_answer_with = None
                self.lost += 1
                return b"", True
            return data, False

        return answered

    def cut(self) -> None:
        """Abort every connection, and every new one until :meth:`restore`."""
        done = threading.Event()

        def cut() -> None:
            self.is_cut = True
            for writer in list(self._writers):
                writer.transport.abort()
            done.set()

        self._loop.call_soon_threadsafe(cut)
        done.wait(10)

    def restore(self) -> None:
        self.is_cut = False

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.is_cut:
            writer.transport.abort()
            return
        self._writers.add(writer)
        try:
            await super()._handle(reader, writer)
        finally:
            self._writers.discard(writer)
