"""Server-Sent Events: one ``data:`` line per event, ``id:`` the log sequence number.

Every event of a task stream carries ``id: <seq>``; a client that reconnects to
SubscribeToTask with ``Last-Event-ID: <seq>`` gets exactly the events after it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any

from accord.engine import StreamItem
from accord.server._http import EVENT_STREAM, Send
from accord.wire import A2AError

KEEPALIVE = b": keep-alive\n\n"
# The head of every event stream: no caching, and no buffering by a proxy (nginx).
STREAM_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", EVENT_STREAM),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


def frame(data: bytes, event_id: int | None = None) -> bytes:
    head = b"id: %d\n" % event_id if event_id is not None else b""
    return head + b"data: " + data + b"\n\n"


async def stream(
    send: Send,
    items: AsyncIterator[StreamItem | None],
    encode_item: Callable[[StreamItem], bytes],
    encode_error: Callable[[A2AError], bytes],
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Write ``items`` as an SSE response until they end or the client goes away. A client
    that disconnects only closes its stream; the task goes on."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [*STREAM_HEADERS, *(headers or [])],
        }
    )
    # Events that are ready together (a batch read from the log, then the end of the stream)
    # go out in one write: each send is a syscall, the largest cost of a short stream.
    chunks: list[bytes] = []
    try:
        while True:
            step: Any = items.__anext__()
            try:
                waiting = step.send(None)
            except StopIteration as ready:
                item = ready.value
            else:  # not ready: flush what is, then wait for it
                if chunks:
                    body, chunks = b"".join(chunks), []
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                item = await _Resume(step, waiting)
            chunks.append(KEEPALIVE if item is None else frame(encode_item(item), item.seq))
    except StopAsyncIteration:
        pass
    except A2AError as error:
        chunks.append(b"event: error\n" + frame(encode_error(error)))
    except OSError:
        return  # the client went away
    finally:
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()
    await send({"type": "http.response.body", "body": b"".join(chunks), "more_body": False})


class _Resume:
    """Await the rest of a coroutine step that was started by hand and suspended on
    ``waiting``: what ``await`` would have done had it started it (values and exceptions
    thrown in by the task are passed through)."""

    __slots__ = ("step", "waiting")

    def __init__(self, step: Awaitable[Any], waiting: Any) -> None:
        self.step = step
        self.waiting = waiting

    def __await__(self) -> Generator[Any, Any, Any]:
        step: Any = self.step
        out = self.waiting
        while True:
            try:
                sent = yield out
            except BaseException as exc:  # cancellation, or the task being closed
                try:
                    out = step.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    out = step.send(sent)
                except StopIteration as done:
                    return done.value
