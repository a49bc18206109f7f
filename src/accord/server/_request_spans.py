"""A span per HTTP request, while tracing is on (accord.telemetry._tracing): the server span
of the trace the request's ``traceparent`` names (or of a new one), current while the request
is handled, so the engine's commits and the agent's run (and the calls it makes with
accord's client) join that trace. Named after the A2A operation once the binding knows it.

Off, none of this runs: the application does not wrap its handler.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from accord.server._access_log import AccessRecord, Handler
from accord.server._http import Message, Receive, Scope, Send
from accord.telemetry import _context as log_context
from accord.telemetry import _tracing as tracing


class Traced:
    """Wraps the application's HTTP handler (inside the access log, when that is on too)."""

    def __init__(self, handle: Handler, tracer: Tracer) -> None:
        self.handle = handle
        self.tracer = tracer

    async def __call__(
        self, scope: Scope, receive: Receive, send: Send, access: AccessRecord | None = None
    ) -> None:
        record = access if access is not None else AccessRecord()
        status = 0

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        method = str(scope["method"])
        attributes: dict[str, Any] = {
            "http.request.method": method,
            "url.path": str(scope["path"])[:200],
        }
        with self.tracer.start_as_current_span(
            f"{method} {scope['path']}"[:200],
            context=tracing.context_from(scope["headers"]),
            kind=SpanKind.SERVER,
            attributes=attributes,
            record_exception=True,
        ) as span:
            if log_context.enabled:  # (JSON logs: this trace's id, on every line of the
                # request, the access log's too, written once the span has ended)
                log_context.trace_id.set(tracing.trace_id_of(span) or None)
            try:
                await self.handle(scope, receive, watched, record)
            finally:
                record.finished(span, status or 500)
                if status >= 500 or not status:
                    span.set_status(Status(StatusCode.ERROR))
