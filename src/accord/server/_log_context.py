"""The request's ids for JSON log lines (accord.telemetry._logs), set around the application's
HTTP handler while JSON logs are on."""

from __future__ import annotations

from accord.server._access_log import AccessRecord, Handler
from accord.server._http import Receive, Scope, Send
from accord.telemetry import ids_from, request_id, task_id, trace_id


class LogContext:
    """Wraps the application's HTTP handler while JSON logs are on: the request's ids."""

    def __init__(self, handle: Handler) -> None:
        self.handle = handle

    async def __call__(
        self, scope: Scope, receive: Receive, send: Send, access: AccessRecord | None = None
    ) -> None:
        rid, trace = ids_from(scope["headers"])
        request_id.set(rid)
        trace_id.set(trace)
        task_id.set(None)
        await self.handle(scope, receive, send, access if access is not None else AccessRecord())
