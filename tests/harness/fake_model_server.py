"""What the fake model servers of the tests share (tests/harness/fake_openai.py,
tests/harness/fake_anthropic.py): a real HTTP server on loopback, scripted replies taken one
per request, their text paced as a test asks.

A test queues :class:`Reply` objects; each request takes the next one (an empty queue answers
"ok"). Every request's JSON body is kept in ``requests``, its headers in ``headers`` and the
time it came in ``asked_at``; the time each text chunk was written in ``sent_at``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Self

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


@dataclass
class Reply:
    chunks: list[str] = field(default_factory=lambda: ["ok"])
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(
        default_factory=list
    )  # id, name, args
    usage: tuple[int, int, int] = (10, 5, 0)  # in (all of it), out, of the input read from cache
    status: int = 200  # not 200: answer this status (and a JSON error) instead of a stream
    retry_after: float | None = None  # with a status: the Retry-After header
    error: str = ""  # with a status: the error's message (else a fake one)
    pause_s: float = 0.0  # between chunks
    cut_after: int | None = None  # end the connection after this many text chunks
    # Set by the test: the chunks after the first wait for it (the client saw the first one)
    held_until: threading.Event | None = None
    # Anthropic's: of the input, the tokens written to the cache; a thinking block before the
    # text; the stop reason ("": end_turn, or tool_use with tool calls); an `error` event
    # (overloaded) on the stream after this many text chunks; tool inputs whole in their
    # block's start (not in pieces); a stream that ends, cleanly, before its message_delta.
    cache_write: int = 0
    thinking: str = ""
    stop_reason: str = ""
    fail_after: int | None = None
    input_at_start: bool = False
    unfinished: bool = False
    # The stream's bytes as they are (either provider), written piece by piece (paced by
    # pause_s), instead of the text, tool calls and usage above
    raw: list[bytes] | None = None


def sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


class FakeModelServer:
    """A fake provider on 127.0.0.1, serving ``routes``, in a thread of its own."""

    name = "model"

    def __init__(self, routes: list[Route], port: int = 0) -> None:
        """On ``port`` (default: a free one; a test names one to bring a model back where
        one was down)."""
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.peers: list[int] = []  # the client's port of each request (its connection)
        self.asked_at: list[float] = []  # time.monotonic() as each request came
        self.sent_at: list[float] = []  # time.monotonic() as each text chunk was written
        self.port = port
        if not port:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            Starlette(routes=routes), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the fake {self.name} server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    async def _take(self, request: Request) -> tuple[dict[str, Any], Reply]:
        self.asked_at.append(time.monotonic())
        self.headers.append(dict(request.headers))
        self.peers.append(request.client.port if request.client else 0)
        body = await request.json()
        self.requests.append(body)
        reply = self.replies.popleft() if self.replies else Reply()
        return body, reply

    @staticmethod
    def _raw(pieces: list[bytes], pause_s: float) -> Response:
        async def written() -> AsyncIterator[bytes]:
            for index, piece in enumerate(pieces):
                if index and pause_s:
                    await asyncio.sleep(pause_s)
                yield piece

        return StreamingResponse(written(), media_type="text/event-stream")

    @staticmethod
    def refusal_headers(reply: Reply) -> dict[str, str]:
        return {} if reply.retry_after is None else {"retry-after": f"{reply.retry_after:g}"}

    async def _text(self, reply: Reply) -> AsyncIterator[str | None]:
        """The reply's text chunks, paced; None where the stream must be cut."""
        for index, chunk in enumerate(reply.chunks):
            if reply.cut_after is not None and index >= reply.cut_after:
                yield None
                return
            if index == 1 and reply.held_until is not None:
                await asyncio.to_thread(reply.held_until.wait, 30)
            if index and reply.pause_s:
                await asyncio.sleep(reply.pause_s)
            self.sent_at.append(time.monotonic())
            yield chunk
