"""``--log-format json``: one JSON object per log line, each with the request id, the task id
and the trace id of what it is about (null where there is none: start-up, background work).

The ids travel in context variables: the HTTP application (and the gRPC binding) set the
request id — the client's ``X-Request-Id`` when it is a sane token, else a new one — and the
trace id of the request's ``traceparent`` (or of the current span with tracing on); the
bindings set the task id once they know it, and an agent's run sets its own. Tasks spawned
while handling a request inherit them.

Secrets: accord never puts a credential, token, webhook path or query into a log message;
as a last guard the formatter also replaces every configured secret (API keys, bearer
tokens, the JWT secret) that a message or traceback would contain with ``***``.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import re
from collections.abc import Iterable
from typing import Any

from accord.telemetry import _context as context
from accord.telemetry._context import request_id, task_id, trace_id

_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")


class JsonFormatter(logging.Formatter):
    def __init__(self, secrets: Iterable[str] = (), process: int | None = None) -> None:
        super().__init__()
        self.process = process  # accord serve --processes N: this process's number
        # Longest first, so that a secret containing another is replaced whole.
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            # (both come from clients: a secret a client put in a path is scrubbed too)
            "request_id": request_id.get(),
            "task_id": task_id.get(),
            "trace_id": _current_trace_id(),
        }
        if self.process is not None:
            line["process"] = self.process
            line["pid"] = record.process
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if self.secrets:
            for name, value in line.items():
                if isinstance(value, str):
                    line[name] = self._clean(value)
        return json.dumps(line, ensure_ascii=False)

    def _clean(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text


def _current_trace_id() -> str | None:
    from accord.telemetry import _tracing as tracing

    if tracing.tracer is not None:
        found = tracing.trace_id_of()
        if found:
            return found
    return trace_id.get()


def configure(
    level: str, log_format: str, secrets: Iterable[str] = (), process: int | None = None
) -> None:
    """The process's logging: ``text`` (the classic line) or ``json``. ``process``: the
    number of this process among the ones ``accord serve --processes N`` runs; its lines then
    say ``[process K pid P]`` (JSON: ``process`` and ``pid``)."""
    handler = logging.StreamHandler()
    if log_format == "json":
        context.enabled = True
        handler.setFormatter(JsonFormatter(secrets, process))
    else:
        where = "" if process is None else f"[process {process} pid %(process)d] "
        handler.setFormatter(
            logging.Formatter(f"%(asctime)s %(levelname)s {where}%(name)s: %(message)s")
        )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())


def new_request_id() -> str:
    return os.urandom(8).hex()


def ids_from(headers: Iterable[tuple[bytes, bytes]]) -> tuple[str, str | None]:
    """(request id, trace id) of a request's raw headers."""
    given = trace = None
    for name, value in headers:
        if name == b"x-request-id":
            given = value.decode("latin-1")
        elif name == b"traceparent":
            found = _TRACEPARENT.fullmatch(value.decode("latin-1").strip().lower())
            trace = found.group(1) if found else None
    if given is None or not _SANE_ID.fullmatch(given):
        given = new_request_id()
    return given, trace
