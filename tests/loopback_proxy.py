"""A loopback TCP proxy in a thread of its own, with its own event loop, for tests that break
real servers' connections on purpose. Subclasses choose the upstream of each connection and
what of the server's bytes gets through (and when the connection is cut)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Self

from tests.processes import free_port


class LoopbackProxy:
    def __init__(self) -> None:
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def upstream_port(self) -> int:
        """The server port of the connection being opened (called once per connection)."""
        raise NotImplementedError

    def sent(self, data: bytes) -> None:
        """A chunk the client sent, on its way to the server."""

    def answers(self) -> Callable[[bytes], tuple[bytes, bool]]:
        """The filter of the connection being opened, given each chunk the server sends: what
        of it reaches the client, and whether the connection is then cut (both sides
        aborted). It may keep state of its own connection."""
        return lambda data: (data, False)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(10)

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", self.port)
        )
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port())
        answered = self.answers()

        async def upstream() -> None:
            while data := await reader.read(65536):
                self.sent(data)
                up_writer.write(data)
                await up_writer.drain()

        async def downstream() -> None:
            while data := await up_reader.read(65536):
                forwarded, cut = answered(data)
                if forwarded:
                    writer.write(forwarded)
                    await writer.drain()
                if cut:
                    return

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for side in (writer, up_writer):
            with contextlib.suppress(Exception):
                side.transport.abort()
