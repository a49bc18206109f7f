"""The access log: one line per HTTP request, on the ``accord.access`` logger.

Off by default (``access_log = true`` or ``accord serve --access-log`` turns it on); when off,
nothing of it runs. A line is written when the response ends (for a stream, when the stream
ends) and holds the method, the path, the status, the duration, and, where known, the A2A
operation and the task id::

    POST / 200 3.1ms op=SendMessage task=01a2...
    GET /tasks/01a2... 404 0.4ms op=GetTask task=01a2...

Never a secret: no header, no query string (a token may travel in either), no body. The path
and the task id come from the client, so control characters in them are escaped and both are
cut at 200 characters.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from accord.engine import StreamItem
from accord.server._http import Message, Receive, Scope, Send
from accord.telemetry import _context as context
from accord.wire import Message as A2AMessage
from accord.wire import SendMessageResponse, StreamResponse, Task

log = logging.getLogger("accord.access")

_MAX_FIELD = 200


class AccessRecord:
    """What the bindings learn about a request, for its log line."""

    __slots__ = ("operation", "task_id")

    def __init__(self) -> None:
        self.operation = ""
        self.task_id = ""

    def finished(self, span: Any, status: int) -> None:
        """Name a request's span (tracing on) after what the bindings learned of it."""
        if self.operation:
            span.update_name(self.operation)
            span.set_attribute("rpc.method", self.operation)
        if self.task_id:
            span.set_attribute("a2a.task.id", self.task_id[:_MAX_FIELD])
        span.set_attribute("http.response.status_code", status)

    def note_operation(self, operation: str) -> None:
        self.operation = operation

    def note_params(self, params: Any) -> None:
        """The task the request names: its id or taskId, or its message's taskId."""
        self.task_id = _task_id_of(params) or self.task_id
        context.note_task(self.task_id)  # (for JSON log lines; nothing when they are off)

    def note_result(self, result: Any) -> None:
        """A new task's id, known only from the answer."""
        if isinstance(result, SendMessageResponse) and isinstance(result.task, Task):
            self.task_id = self.task_id or result.task.id
            context.note_task(self.task_id)

    def watching(self, encode_item: Callable[[StreamItem], bytes]) -> Callable[[StreamItem], bytes]:
        """``encode_item`` (a stream's event encoder) noting the task of the first event: a
        new task's id comes with it."""

        def encode(item: StreamItem) -> bytes:
            if not self.task_id:
                self.task_id = _task_id_of_event(item.response)
                context.note_task(self.task_id)
            return encode_item(item)

        return encode

    def line(self, method: str, path: str, status: int, seconds: float) -> str:
        parts = [method, _printable(path), str(status), f"{seconds * 1000:.1f}ms"]
        if self.operation:
            parts.append(f"op={self.operation}")
        if self.task_id:
            parts.append(f"task={_printable(self.task_id)}")
        return " ".join(parts)


def _task_id_of(params: Any) -> str:
    message = getattr(params, "message", None)
    if isinstance(message, A2AMessage):
        return message.task_id
    for name in ("task_id", "id"):  # push configs name their task task_id, their own id id
        value = getattr(params, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def _task_id_of_event(event: StreamResponse) -> str:
    if isinstance(event.task, Task):
        return event.task.id
    for update in (event.status_update, event.artifact_update, event.message):
        task_id = getattr(update, "task_id", "")
        if isinstance(task_id, str) and task_id:
            return task_id
    return ""


def _printable(text: str) -> str:
    if len(text) > _MAX_FIELD:
        text = text[:_MAX_FIELD] + "…"
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


Handler = Callable[[Scope, Receive, Send, AccessRecord | None], Awaitable[None]]


class AccessLogged:
    """Wraps the application's HTTP handler: times the request, sees the status it answers,
    and writes the line once the handler returns."""

    def __init__(self, handle: Handler) -> None:
        self.handle = handle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        record = AccessRecord()
        status = 0

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        start = time.perf_counter()
        try:
            await self.handle(scope, receive, watched, record)
        except Exception:
            status = status or 500  # what the server answers for an app that failed
            raise
        finally:
            elapsed = time.perf_counter() - start
            log.info(record.line(str(scope["method"]), str(scope["path"]), status, elapsed))
