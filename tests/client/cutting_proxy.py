"""A loopback TCP proxy that can cut one event stream mid-way, to break real servers' streams.

When armed, the proxy watches what the server sends; on the first connection that carries an
event stream it forwards exactly ``cut_after`` SSE ``data:`` frames, then closes both sides.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from tests.loopback_proxy import LoopbackProxy


class CuttingProxy(LoopbackProxy):
    def __init__(self, upstream_port: int) -> None:
        super().__init__()
        self._upstream_port = upstream_port
        self.cut_after: int | None = None  # armed when set
        self.cuts = 0
        self.requests: list[bytes] = []  # every chunk sent upstream, for assertions

    def arm(self, cut_after: int) -> None:
        self.cut_after = cut_after

    def upstream_port(self) -> int:
        return self._upstream_port

    def sent(self, data: bytes) -> None:
        self.requests.append(data)

    def answers(self) -> Callable[[bytes], tuple[bytes, bool]]:
        frames = 0
        streaming = False

        def answered(data: bytes) -> tuple[bytes, bool]:
            nonlocal frames, streaming
            streaming = streaming or b"text/event-stream" in data
            if not streaming or self.cut_after is None:
                return data, False
            # forward exactly up to the end of the cut_after-th frame, even when several
            # frames arrived in one read
            position = 0
            while (found := data.find(b"data: ", position)) >= 0:
                frames += 1
                end = data.find(b"\n\n", found)
                position = len(data) if end < 0 else end + 2
                if frames >= self.cut_after:
                    self.cut_after = None
                    self.cuts += 1
                    return data[:position], True
            return data, False

        return answered


@contextlib.contextmanager
def cutting_proxy(upstream_port: int) -> Iterator[CuttingProxy]:
    with CuttingProxy(upstream_port) as proxy:
        yield proxy
