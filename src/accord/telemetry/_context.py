"""The ids a log line carries (accord.telemetry._logs), in context variables: set per request
(and per agent run), inherited by the tasks spawned meanwhile."""

from __future__ import annotations

import contextvars

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "accord_request_id", default=None
)
task_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("accord_task_id", default=None)
trace_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "accord_trace_id", default=None
)

# Whether JSON logs are on (the only reader of these ids): what sets them tests this first.
enabled = False


def note_task(value: str) -> None:
    """The task the current request or run is about, for its log lines."""
    if enabled and value:
        task_id.set(value[:200])
