"""The few ASGI pieces the bindings share: reading a bounded body, headers, responses."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from accord.wire import A2AError, ErrorKind

if TYPE_CHECKING:
    from accord.server._access_log import AccessRecord

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON = b"application/json"
A2A_JSON = b"application/a2a+json"
EVENT_STREAM = b"text/event-stream"


class Request:
    """What a binding needs of an HTTP request, read lazily from the ASGI scope."""

    __slots__ = ("_headers", "_query", "access", "receive", "scope")

    def __init__(self, scope: Scope, receive: Receive, access: AccessRecord | None = None) -> None:
        self.scope = scope
        self.receive = receive
        self.access = access  # what the bindings learn, for the access log; None when it is off
        self._headers: dict[str, str] | None = None
        self._query: list[tuple[str, str]] | None = None

    @property
    def method(self) -> str:
        return str(self.scope["method"])

    @property
    def path(self) -> str:
        return str(self.scope["path"])

    @property
    def headers(self) -> dict[str, str]:
        """Header names lower-cased; repeated headers joined with commas."""
        if self._headers is None:
            headers: dict[str, str] = {}
            for raw_name, raw_value in self.scope["headers"]:
                name = raw_name.decode("latin-1").lower()
                value = raw_value.decode("latin-1")
                headers[name] = f"{headers[name]},{value}" if name in headers else value
            self._headers = headers
        return self._headers

    @property
    def query(self) -> list[tuple[str, str]]:
        if self._query is None:
            raw = self.scope.get("query_string", b"")
            # Most requests have none; parse_qsl costs a few microseconds even on b"".
            self._query = parse_qsl(raw.decode("latin-1"), keep_blank_values=True) if raw else []
        return self._query

    def query_value(self, name: str) -> str | None:
        if not self.scope.get("query_string"):  # most requests: nothing to parse or compare
            return None
        lowered = name.lower()
        for key, value in self.query:
            if key.lower() == lowered:
                return value
        return None

    def service_parameter(self, name: str) -> str | None:
        """An ``A2A-*`` service parameter (``name`` in lower case) from its header or, failing
        that, the query string."""
        value = self.headers.get(name)
        return value if value is not None else self.query_value(name)

    def require_json(self) -> None:
        """UNSUPPORTED_MEDIA_TYPE unless the body is declared JSON (``application/json`` or
        ``application/*+json``). A missing Content-Type is not JSON: a browser sends a
        cross-site POST without a preflight only with a form or ``text/plain`` type (or none),
        so requiring JSON keeps pages on other sites from driving the server."""
        declared = self.headers.get("content-type", "")
        essence = declared.partition(";")[0].strip().lower()
        if essence == "application/json" or (
            essence.startswith("application/") and essence.endswith("+json")
        ):
            return
        raise A2AError(
            ErrorKind.UNSUPPORTED_MEDIA_TYPE,
            f"the request body must be application/json, not {declared or '(no Content-Type)'}",
        )

    def accepts(self, media_type: str) -> bool:
        return media_type in self.headers.get("accept", "")

    async def body(self, limit: int) -> bytes:
        """The whole body; PAYLOAD_TOO_LARGE past ``limit`` bytes (checked as it arrives)."""
        declared = self.headers.get("content-length")
        # ASCII digits only (int() refuses some of what isdigit() takes), and no int() of a
        # number longer than any body: another ASGI server may pass such a header on.
        if (
            declared is not None
            and declared.isascii()
            and declared.isdigit()
            and (len(declared) > 18 or int(declared) > limit)
        ):
            raise _too_large(limit)
        chunks: list[bytes] = []
        size = 0
        message = await self.receive()
        while message["type"] != "http.disconnect":
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            if not message.get("more_body", False):
                if not chunks:
                    return chunk  # the usual case: the whole body in one message
                chunks.append(chunk)
                break
            chunks.append(chunk)
            message = await self.receive()
        return b"".join(chunks)


def _too_large(limit: int) -> A2AError:
    return A2AError(ErrorKind.PAYLOAD_TOO_LARGE, f"request body exceeds {limit} bytes")


async def respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes = JSON,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def until_disconnected(receive: Receive, work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` (a response being streamed) until it ends or the client disconnects, and
    cancel it then. ASGI servers let ``send`` return quietly once the client is gone, so a
    stream of a waiting task would otherwise hold its follower forever. Call it after the
    request body has been read.

    ``work`` runs in the calling task and only the watcher gets a task of its own: a
    disconnect cancels the calling task, and that one cancellation is taken back here."""
    task = asyncio.current_task()
    assert task is not None
    gone = finished = False

    def client_left(watcher: asyncio.Future[None]) -> None:
        nonlocal gone
        if watcher.cancelled():
            return
        watcher.exception()  # retrieved: a receive that failed counts as the client gone too
        if not finished:  # (a callback already scheduled when the work ended comes too late)
            gone = True
            task.cancel()

    watcher = asyncio.ensure_future(_disconnect(receive))
    watcher.add_done_callback(client_left)
    try:
        await work
    except asyncio.CancelledError:
        # Ours, unless someone else (a server shutting down) cancelled the task as well.
        if not gone or task.uncancel() > 0:
            raise
    else:
        if gone:  # work swallowed the cancellation and ended on its own
            task.uncancel()
    finally:
        finished = True
        watcher.remove_done_callback(client_left)
        watcher.cancel()


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
