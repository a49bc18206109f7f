"""A loopback TCP proxy that loses one answer: the request reaches the server, the server
answers (so it carried the request out), and the client's connection is cut before a byte of
that answer reaches it. Connection n goes to ``upstreams[n]`` (the last one once they run
out), so a retry can land on another node."""

from __future__ import annotations

from collections.abc import Callable

from tests.loopback_proxy import LoopbackProxy


class DroppingProxy(LoopbackProxy):
    def __init__(self, upstreams: list[int]) -> None:
        super().__init__()
        self.upstreams = upstreams
        self.drop_next_answer = False
        self.dropped = 0
        self.connections = 0

    def upstream_port(self) -> int:
        port = self.upstreams[min(self.connections, len(self.upstreams) - 1)]
        self.connections += 1
        return port

    def answers(self) -> Callable[[bytes], tuple[bytes, bool]]:
        return self._answered

    def _answered(self, data: bytes) -> tuple[bytes, bool]:
        if self.drop_next_answer and _is_answer(data):
            self.drop_next_answer = False
            self.dropped += 1
            return b"", True  # the answer is lost with the connection
        return data, False


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
