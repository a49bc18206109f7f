"""A loopback TCP proxy that loses one answer: the request reaches the server, the server
answers (so it carried the request out), and the client's connection is cut before a byte of
that answer reaches it. Connection n goes to ``upstreams[n]`` (the last one once they run
out), so a retry can land on another node. It runs in a thread with its own event loop."""

from __future__ import annotations

import asyncio
import threading

from tests.processes import free_port


class DroppingProxy:
    def __init__(self, upstreams: list[int]) -> None:
        self.upstreams = upstreams
        self.port = free_port()
        self.drop_next_answer = False
        self.dropped = 0
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> DroppingProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

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
        upstream_port = self.upstreams[min(self.connections, len(self.upstreams) - 1)]
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)

        async def upstream() -> None:
            while data := await reader.read(65536):
                up_writer.write(data)
                await up_writer.drain()

        async def downstream() -> None:
            while data := await up_reader.read(65536):
                if self.drop_next_answer and _is_answer(data):
                    self.drop_next_answer = False
                    self.dropped += 1
                    writer.transport.abort()  # the answer is lost with the connection
                    return
                writer.write(data)
                await writer.drain()

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        writer.close()
        up_writer.close()


def _is_answer(data: bytes) -> bool:
    """An HTTP response, or gRPC's: HTTP/2 frames with a HEADERS (1) or DATA (0) frame of a
    stream (the connection's own SETTINGS, PING and WINDOW_UPDATE frames pass)."""
    if data.startswith(b"HTTP/"):
        return True
    position = 0
    while position + 9 <= len(data):
        length = int.from_bytes(data[position : position + 3], "big")
        kind = data[position + 3]
        stream = int.from_bytes(data[position + 5 : position + 9], "big") & 0x7FFFFFFF
        if kind in (0, 1) and stream != 0:
            return True
        position += 9 + length
    return False
