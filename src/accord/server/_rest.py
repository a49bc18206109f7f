"""The HTTP+JSON binding: the A2A 1.0 paths, each also under a ``/{tenant}`` prefix.

Non-path fields come from the JSON body (POST) or from camelCase query parameters (GET and
DELETE); path fields always win over both.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from accord.engine import StreamItem
from accord.server import _sse as sse
from accord.server._binding import Binding
from accord.server._errors import from_wire_error, http_answer, rest_error, unexpected_error
from accord.server._failures import log_unexpected
from accord.server._http import A2A_JSON, JSON, Request, Send, respond
from accord.service import OPERATIONS, Call, Operation
from accord.wire import (
    A2AError,
    ErrorKind,
    WireError,
    convert,
    decode,
    decode_json,
    encode,
    invalid_params,
)

log = logging.getLogger("accord.server")

PUSH = "pushNotificationConfigs"


def match(method: str, segments: list[str]) -> tuple[str, dict[str, str]] | None:
    """The operation and path fields for a path (without tenant prefix), or None."""
    n = len(segments)
    head = segments[0] if segments else ""
    if n == 1:
        if head == "message:send" and method == "POST":
            return "SendMessage", {}
        if head == "message:stream" and method == "POST":
            return "SendStreamingMessage", {}
        if head == "tasks" and method == "GET":
            return "ListTasks", {}
        if head == "extendedAgentCard" and method == "GET":
            return "GetExtendedAgentCard", {}
        return None
    if head != "tasks" or not segments[1]:
        return None
    if n == 2:
        task, _, verb = segments[1].rpartition(":")
        if task and verb == "cancel" and method == "POST":
            return "CancelTask", {"id": task}
        if task and verb == "subscribe" and method in ("GET", "POST"):
            return "SubscribeToTask", {"id": task}
        if method == "GET":
            return "GetTask", {"id": segments[1]}
        return None
    if segments[2] != PUSH:
        return None
    if n == 3:
        if method == "POST":
            return "CreateTaskPushNotificationConfig", {"taskId": segments[1]}
        if method == "GET":
            return "ListTaskPushNotificationConfigs", {"taskId": segments[1]}
    if n == 4 and segments[3]:
        if method == "GET":
            return "GetTaskPushNotificationConfig", {"taskId": segments[1], "id": segments[3]}
        if method == "DELETE":
            return "DeleteTaskPushNotificationConfig", {"taskId": segments[1], "id": segments[3]}
    return None


def route(method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
    segments = path.strip("/").split("/")
    found = match(method, segments)
    if found is None and len(segments) > 1:
        found = match(method, segments[1:])
        if found is not None:
            found[1]["tenant"] = segments[0]
    if found is None:
        return None
    return OPERATIONS[found[0]], found[1]


def _bodiless(request: Request) -> bool:
    """The head announces no body. A subscription (a read, which a page on another site
    could not read the answer of) may then omit the Content-Type: the official SDK's does."""
    headers = request.headers
    return headers.get("content-length", "0") == "0" and "transfer-encoding" not in headers


def _encode_event(item: StreamItem) -> bytes:
    return encode(item.response)


class RestBinding(Binding):
    name = "http+json"

    async def handle(
        self, request: Request, send: Send, routed: tuple[Operation, dict[str, str]]
    ) -> None:
        operation, path_fields = routed
        # metrics (accord.telemetry): timed only when they are on
        metrics = self.metrics
        started = time.perf_counter() if metrics is not None else 0.0
        call: Call | None = None
        content_type = A2A_JSON if request.accepts("application/a2a+json") else JSON
        headers = self.response_headers([])
        access = request.access
        if access is not None:
            access.note_operation(operation.name)
        try:
            call = self.prepare(request)
            await self.limit(call.caller, request)
            headers = self.response_headers(call.extensions)
            self.authorize(call.caller, operation.command)
            params = await self._params(request, operation, path_fields)
            if access is not None:
                access.note_params(params)
            result = await operation.handler(self.service, params, call)
            if access is not None:
                access.note_result(result)
        except A2AError as error:
            await self._error(send, error, headers, content_type)
            if metrics is not None:
                self.observed(operation, call, error.kind.reason, started)
            return
        except Exception as exc:
            log_unexpected(log, "HTTP+JSON request failed")
            failure = unexpected_error(exc)
            await self._error(send, failure, headers, content_type)
            if metrics is not None:
                self.observed(operation, call, failure.kind.reason, started)
            return
        if operation.streaming:
            encode_item = _encode_event if access is None else access.watching(_encode_event)
            stream = sse.stream(
                send, result, encode_item, lambda error: encode(rest_error(error)), headers
            )
            await self.stream_out(request, stream, operation, call, started)
            return
        await respond(send, 200, encode(result), content_type, headers)
        if metrics is not None:
            self.observed(operation, call, "ok", started)

    async def _params(
        self, request: Request, operation: Operation, path_fields: dict[str, str]
    ) -> Any:
        try:
            if request.method != "POST":
                fields: dict[str, Any] = {}
                for key, value in request.query:
                    if key.lower().startswith("a2a-"):
                        continue
                    fields[key] = value
                fields.update(path_fields)
                return convert(fields, operation.request_type, from_strings=True)
            if not (operation.name == "SubscribeToTask" and _bodiless(request)):
                request.require_json()
            body = await request.body(self.service.bounds.max_body_bytes)
            if body.strip():
                if not path_fields:
                    return decode(body, operation.request_type)
                raw = decode_json(body)
                if not isinstance(raw, dict):
                    raise A2AError(ErrorKind.INVALID_PARAMS, "the body must be a JSON object")
            else:
                raw = {}
            raw.update(path_fields)
            return convert(raw, operation.request_type)
        except WireError as exc:
            raise from_wire_error(exc) from None
        except RecursionError:  # JSON nested past the parser's limit
            raise invalid_params("", "the request is nested too deeply") from None

    @staticmethod
    async def _error(
        send: Send, error: A2AError, headers: list[tuple[bytes, bytes]], content_type: bytes
    ) -> None:
        body = encode(rest_error(error))
        status, extra = http_answer(error, jsonrpc=False)
        await respond(send, status, body, content_type, [*headers, *extra])
