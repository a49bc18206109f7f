"""Server-Sent Events: one ``data:`` line per event, ``id:`` the log sequence number.

Every event of a task stream carries ``id: <seq>``; a client that reconnects to
SubscribeToTask with ``Last-Event-ID: <seq>`` gets exactly the events after it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from accord.engine import StreamItem
from accord.server.http import EVENT_STREAM, Send
from accord.wire.errors import A2AError

KEEPALIVE = b": keep-alive\n\n"


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
            "headers": [
                (b"content-type", EVENT_STREAM),
                (b"cache-control", b"no-cache"),
                (b"x-accel-buffering", b"no"),
                *(headers or []),
            ],
        }
    )
    try:
        async for item in items:
            chunk = KEEPALIVE if item is None else frame(encode_item(item), item.seq)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except A2AError as error:
        body = b"event: error\n" + frame(encode_error(error))
        await send({"type": "http.response.body", "body": body, "more_body": True})
    except OSError:
        return  # the client went away
    finally:
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()
    await send({"type": "http.response.body", "body": b"", "more_body": False})
