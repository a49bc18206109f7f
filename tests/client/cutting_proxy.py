"""A loopback TCP proxy that can cut one event stream mid-way, to break real servers' streams.

When armed, the proxy watches what the server sends; on the first connection that carries an
event stream it forwards exactly ``cut_after`` SSE ``data:`` frames, then closes both sides.
It runs in a background thread with its own event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

from tests.processes import free_port


class CuttingProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self.cut_after: int | None = None  # armed when set
        self.cuts = 0
        self.requests: list[bytes] = []  # every chunk sent upstream, for assertions
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def arm(self, cut_after: int) -> None:
        self.cut_after = cut_after

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
            self._loop.run_until_complete(server.wait_closed())

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)

        async def upstream() -> None:
            while data := await reader.read(65536):
                self.requests.append(data)
                up_writer.write(data)
                await up_writer.drain()

        async def downstream() -> None:
            frames = 0
            streaming = False
            while data := await up_reader.read(65536):
                streaming = streaming or b"text/event-stream" in data
                cut_at = None
                if streaming and self.cut_after is not None:
                    # forward exactly up to the end of the cut_after-th frame, even when
                    # several frames arrived in one read
                    position = 0
                    while (found := data.find(b"data: ", position)) >= 0:
                        frames += 1
                        end = data.find(b"\n\n", found)
                        position = len(data) if end < 0 else end + 2
                        if frames >= self.cut_after:
                            cut_at = position
                            break
                writer.write(data if cut_at is None else data[:cut_at])
                await writer.drain()
                if cut_at is not None:
                    self.cut_after = None
                    self.cuts += 1
                    return

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for w in (writer, up_writer):
            with contextlib.suppress(Exception):
                w.transport.abort()

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(10)

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@contextlib.contextmanager
def cutting_proxy(upstream_port: int) -> Iterator[CuttingProxy]:
    proxy = CuttingProxy(upstream_port)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
