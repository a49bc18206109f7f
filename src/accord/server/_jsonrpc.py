"""The JSON-RPC 2.0 binding: one POST endpoint, methods by their PascalCase names."""

from __future__ import annotations

import logging
import time
from typing import Any

import msgspec

from accord.engine import StreamItem
from accord.server import _sse as sse
from accord.server._binding import Binding
from accord.server._errors import from_wire_error, http_answer, jsonrpc_error, unexpected_error
from accord.server._failures import log_unexpected
from accord.server._http import JSON, Request, Send, respond
from accord.service import OPERATIONS, Call, Operation
from accord.wire import A2AError, ErrorKind, WireError, decode, encode, invalid_params

log = logging.getLogger("accord.server")

RequestId = str | int | None

# msgspec refuses JSON nested past its recursion limit with RecursionError.
TOO_DEEP = "the request is nested too deeply"


class Envelope(msgspec.Struct, gc=False):
    jsonrpc: str
    method: str
    id: RequestId = None
    params: msgspec.Raw = msgspec.Raw(b"{}")


_envelope = msgspec.json.Decoder(Envelope)
_any = msgspec.json.Decoder()


def _result(request_id: RequestId, result: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + encode(request_id) + b',"result":' + result + b"}"


def _error(request_id: RequestId, error: A2AError) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "error": jsonrpc_error(error)})


def _recover_id(body: bytes) -> RequestId:
    """The id of a request whose envelope is invalid, if it has a usable one."""
    try:
        raw = _any.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return None
    if isinstance(raw, dict):
        value = raw.get("id")
        if isinstance(value, str | int) and not isinstance(value, bool):
            return value
    return None


class JsonRpcBinding(Binding):
    name = "jsonrpc"

    async def handle(self, request: Request, send: Send) -> None:
        request_id: RequestId = None
        headers: list[tuple[bytes, bytes]] = []
        # metrics (accord.telemetry): timed only when they are on
        metrics = self.metrics
        started = time.perf_counter() if metrics is not None else 0.0
        operation: Operation | None = None
        call: Call | None = None
        try:
            # Who asks and in which version come from the head: a caller the server refuses
            # is answered before a byte of its body is read (and held).
            call = self.prepare(request)
            await self.limit(call.caller, request)
            headers = self.response_headers(call.extensions)
            request.require_json()
            body = await request.body(self.service.bounds.max_body_bytes)
            try:
                envelope = _envelope.decode(body)
            except msgspec.ValidationError as exc:
                request_id = _recover_id(body)
                raise A2AError(
                    ErrorKind.INVALID_REQUEST, f"not a JSON-RPC 2.0 request: {exc}"
                ) from None
            except msgspec.DecodeError as exc:
                raise A2AError(ErrorKind.PARSE_ERROR, f"malformed JSON: {exc}") from None
            except RecursionError:
                raise A2AError(ErrorKind.INVALID_REQUEST, TOO_DEEP) from None
            request_id = envelope.id
            if envelope.jsonrpc != "2.0":
                raise A2AError(ErrorKind.INVALID_REQUEST, 'jsonrpc must be "2.0"')
            operation = OPERATIONS.get(envelope.method)
            if operation is None:
                raise A2AError(ErrorKind.METHOD_NOT_FOUND, f"no method {envelope.method!r}")
            if request.access is not None:
                request.access.note_operation(operation.name)
            self.authorize(call.caller, operation.command)
            try:
                params = decode(bytes(envelope.params), operation.request_type)
            except WireError as exc:
                raise (
                    from_wire_error(exc)
                    if not exc.parse_error
                    else A2AError(ErrorKind.INVALID_PARAMS, exc.description)
                ) from None
            except RecursionError:
                raise invalid_params("params", TOO_DEEP) from None
            if request.access is not None:
                request.access.note_params(params)
            result = await operation.handler(self.service, params, call)
            if request.access is not None:
                request.access.note_result(result)
        except A2AError as error:
            status, extra = http_answer(error, jsonrpc=True)
            await respond(send, status, _error(request_id, error), JSON, [*headers, *extra])
            if metrics is not None:
                self.observed(operation, call, error.kind.reason, started)
            return
        except Exception as exc:
            log_unexpected(log, "JSON-RPC request failed")
            failure = unexpected_error(exc)
            status, extra = http_answer(failure, jsonrpc=True)
            await respond(send, status, _error(request_id, failure), JSON, [*headers, *extra])
            if metrics is not None:
                self.observed(operation, call, failure.kind.reason, started)
            return
        if operation.streaming:
            rid = request_id

            def encode_event(item: StreamItem) -> bytes:
                return _result(rid, encode(item.response))

            access = request.access
            encode_item = encode_event if access is None else access.watching(encode_event)
            stream = sse.stream(
                send, result, encode_item, lambda error: _error(rid, error), headers
            )
            await self.stream_out(request, stream, operation, call, started)
            return
        await respond(send, 200, _result(request_id, encode(result)), JSON, headers)
        if metrics is not None:
            self.observed(operation, call, "ok", started)


def error_body(error: A2AError, request_id: Any = None) -> bytes:
    return _error(request_id, error)
