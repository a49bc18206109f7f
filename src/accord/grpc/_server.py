"""The gRPC binding: ``lf.a2a.v1.A2AService`` on ``grpc.aio``, over the same operations
(``accord.service._operations``) and engine as the HTTP bindings.

Each call: metadata -> authentication, ``a2a-version`` / ``a2a-extensions`` negotiation and
the operation's grant (the same :class:`~accord.server._binding.Binding` the HTTP bindings use,
fed the metadata as headers); proto request -> wire model (``accord.wire.protobuf``); the
operation's handler; the result back to proto. Errors come from the one table
(``accord.wire._errors``): the status code is the row's ``grpc_status`` and the rich status
(``grpc-status-details-bin``) carries a ``google.rpc.Status`` with ``google.rpc.ErrorInfo``
and, for validation errors, ``google.rpc.BadRequest``.

Deadlines and cancellation need nothing extra: grpc.aio cancels the handler's task, which
closes the stream's subscription (``aclose`` in ``finally``); the task itself goes on, as with
SSE. Heartbeats of the engine's streams (``None`` items) are dropped; gRPC has its own
keepalive.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeAlias, cast

import grpc
from google.protobuf import any_pb2, empty_pb2
from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtoMessage
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status
from opentelemetry.trace import SpanKind, Tracer

from accord.server import (
    A2AApplication,
    Authenticator,
    Binding,
    NoAuthentication,
    Receive,
    Request,
    Scope,
    Send,
    from_wire_error,
    log_unexpected,
    unexpected_error,
)
from accord.service import OPERATIONS, Call, Operation, Service
from accord.telemetry import RequestMetrics, RequestStats
from accord.telemetry import _context as log_context
from accord.telemetry import _logs as logs
from accord.telemetry import _tracing as tracing
from accord.wire import ERROR_DOMAIN, A2AError, ErrorKind, ListTasksResponse, Wire, WireError
from accord.wire.protobuf import from_proto, proto_class, to_proto

log = logging.getLogger("accord.grpc")

SERVICE_NAME = "lf.a2a.v1.A2AService"

Context: TypeAlias = Any  # grpc.aio.ServicerContext (grpc ships no type information)


# --- errors --------------------------------------------------------------------------------


def rich_status(error: A2AError) -> grpc.Status:
    """The error as a gRPC status with ``google.rpc`` details in its trailing metadata."""
    code = grpc.StatusCode[error.kind.grpc_status]
    info = error_details_pb2.ErrorInfo(
        reason=error.kind.reason, domain=ERROR_DOMAIN, metadata=dict(error.metadata)
    )
    details = [_packed(info)]
    if error.violations:
        bad_request = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(
                    field=v.field, description=v.description
                )
                for v in error.violations
            ]
        )
        details.append(_packed(bad_request))
    if error.retry_after_s is not None:  # (UNAVAILABLE: when to try again)
        retry = error_details_pb2.RetryInfo()
        retry.retry_delay.FromSeconds(error.retry_after_s)
        details.append(_packed(retry))
    status = status_pb2.Status(code=code.value[0], message=error.message, details=details)
    result: grpc.Status = rpc_status.to_status(status)
    return result


def _packed(message: ProtoMessage) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


# --- the binding ---------------------------------------------------------------------------


class _MetadataRequest(Request):
    """Call metadata seen as the HTTP request the shared binding logic reads: text keys as
    lower-cased headers (repeated keys joined with commas), no query string, no body."""

    def __init__(self, metadata: Any, peer: str = "") -> None:
        pairs = [
            (key.encode("latin-1"), value.encode("latin-1"))
            for key, value in (metadata or ())
            if isinstance(value, str)  # ``-bin`` keys carry bytes; none of ours does
        ]
        # The peer's address without its port (gRPC's "ipv4:1.2.3.4:5", "ipv6:[::1]:5"):
        # what tells anonymous callers apart for rate limits.
        address = peer.partition(":")[2].rsplit(":", 1)[0] if peer.count(":") >= 2 else peer
        super().__init__({"headers": pairs, "query_string": b"", "peer": address}, _no_body)
        self._query = []  # gRPC has no query string: skip parsing an empty one per lookup


async def _no_body() -> dict[str, Any]:
    return {"type": "http.disconnect"}


class GrpcBinding(Binding):
    """Handlers for every method of ``A2AService``, by method name."""

    json_out = False  # results are converted to protobuf messages
    name = "grpc"

    def handlers(self) -> dict[str, grpc.RpcMethodHandler]:
        # Requests arrive as bytes and are parsed in the handler, so that bytes which are not
        # the request message get INVALID_ARGUMENT with the rich status like any bad request
        # (grpc's own deserializer failure would be a bare INTERNAL).
        out: dict[str, grpc.RpcMethodHandler] = {}
        tracer = tracing.tracer  # (accord.telemetry: a span per call while tracing is on)
        for name, operation in OPERATIONS.items():
            if operation.streaming:
                stream = self._streaming(operation)
                if tracer is not None:
                    stream = _traced_stream(tracer, operation, stream)
                if log_context.enabled:
                    stream = _logged_stream(stream)
                out[name] = grpc.unary_stream_rpc_method_handler(
                    stream, response_serializer=_serialize
                )
            else:
                unary = self._unary(operation)
                if tracer is not None:
                    unary = _traced_unary(tracer, operation, unary)
                if log_context.enabled:
                    unary = _logged_unary(unary)
                out[name] = grpc.unary_unary_rpc_method_handler(
                    unary, response_serializer=_serialize
                )
        return out

    async def _begin(self, operation: Operation, raw: bytes, context: Context) -> tuple[Any, Call]:
        head = _MetadataRequest(context.invocation_metadata(), context.peer())
        call = self.prepare(head)
        await self.limit(call.caller, head)
        self.authorize(call.caller, operation.command)
        request_class = proto_class(cast(type[Wire], operation.request_type))
        try:
            message = request_class.FromString(raw)
        except DecodeError as exc:
            raise A2AError(
                ErrorKind.INVALID_PARAMS, f"not a {request_class.DESCRIPTOR.name}: {exc}"
            ) from None
        try:
            request = from_proto(message, operation.request_type)
        except WireError as exc:
            raise from_wire_error(exc) from None
        return request, call

    def _unary(self, operation: Operation) -> Callable[[Any, Context], Awaitable[Any]]:
        async def handle(message: Any, context: Context) -> Any:
            metrics = self.metrics  # (accord.telemetry: timed only when metrics are on)
            started = time.perf_counter() if metrics is not None else 0.0
            call: Call | None = None
            try:
                request, call = await self._begin(operation, message, context)
                result = await operation.handler(self.service, request, call)
                await _send_extensions(context, call)
                response = _response(operation, result)
                if metrics is not None:
                    self.observed(operation, call, "ok", started)
                return response
            except A2AError as error:
                if metrics is not None:
                    self.observed(operation, call, error.kind.reason, started)
                await context.abort_with_status(rich_status(error))
            except Exception as exc:
                log_unexpected(log, "gRPC %s failed", operation.name)
                failure = unexpected_error(exc)
                if metrics is not None:
                    self.observed(operation, call, failure.kind.reason, started)
                await context.abort_with_status(rich_status(failure))
            raise AssertionError("unreachable: abort raises")  # pragma: no cover

        return handle

    def _streaming(self, operation: Operation) -> Callable[[Any, Context], AsyncIterator[Any]]:
        async def handle(message: Any, context: Context) -> AsyncIterator[Any]:
            items = None
            metrics = self.metrics  # (accord.telemetry: timed only when metrics are on)
            started = time.perf_counter() if metrics is not None else 0.0
            call: Call | None = None
            stats: RequestStats | None = None
            try:
                request, call = await self._begin(operation, message, context)
                items = await operation.handler(self.service, request, call)
                await _send_extensions(context, call)
                if metrics is not None:
                    stats = self.observed(operation, call, "ok", started)
                    stats.streams += 1
                async for item in items:
                    if item is not None:
                        yield to_proto(item.response)
            except A2AError as error:
                if metrics is not None and stats is None:
                    self.observed(operation, call, error.kind.reason, started)
                await context.abort_with_status(rich_status(error))
            except Exception as exc:
                log_unexpected(log, "gRPC %s failed", operation.name)
                failure = unexpected_error(exc)
                if metrics is not None and stats is None:
                    self.observed(operation, call, failure.kind.reason, started)
                await context.abort_with_status(rich_status(failure))
            finally:
                if stats is not None:
                    stats.streams -= 1
                close = getattr(items, "aclose", None)
                if close is not None:
                    await close()

        return handle


def _span(tracer: Tracer, operation: Operation, context: Context) -> Any:
    carrier = {key: value for key, value in context.invocation_metadata() or ()}
    return tracer.start_as_current_span(
        operation.name,
        context=tracing.context_from_mapping(carrier),
        kind=SpanKind.SERVER,
        attributes={
            "rpc.system": "grpc",
            "rpc.service": SERVICE_NAME,
            "rpc.method": operation.name,
        },
    )


def _traced_unary(
    tracer: Tracer, operation: Operation, handle: Callable[[Any, Context], Awaitable[Any]]
) -> Callable[[Any, Context], Awaitable[Any]]:
    async def traced(message: Any, context: Context) -> Any:
        with _span(tracer, operation, context):
            return await handle(message, context)

    return traced


def _traced_stream(
    tracer: Tracer, operation: Operation, handle: Callable[[Any, Context], AsyncIterator[Any]]
) -> Callable[[Any, Context], AsyncIterator[Any]]:
    async def traced(message: Any, context: Context) -> AsyncIterator[Any]:
        with _span(tracer, operation, context):
            async for item in handle(message, context):
                yield item

    return traced


def _note_ids(context: Context) -> None:
    """The call's request id and trace id, for JSON log lines (accord.telemetry._logs)."""
    pairs = [
        (key.encode("latin-1"), value.encode("latin-1"))
        for key, value in context.invocation_metadata() or ()
        if isinstance(value, str)
    ]
    request_id, trace_id = logs.ids_from(pairs)
    log_context.request_id.set(request_id)
    log_context.trace_id.set(trace_id)


def _logged_unary(
    handle: Callable[[Any, Context], Awaitable[Any]],
) -> Callable[[Any, Context], Awaitable[Any]]:
    async def logged(message: Any, context: Context) -> Any:
        _note_ids(context)
        return await handle(message, context)

    return logged


def _logged_stream(
    handle: Callable[[Any, Context], AsyncIterator[Any]],
) -> Callable[[Any, Context], AsyncIterator[Any]]:
    async def logged(message: Any, context: Context) -> AsyncIterator[Any]:
        _note_ids(context)
        async for item in handle(message, context):
            yield item

    return logged


def _serialize(message: ProtoMessage) -> bytes:
    return message.SerializeToString()


def _response(operation: Operation, result: Any) -> ProtoMessage:
    if isinstance(result, Wire):
        return to_proto(result)
    if operation.name == "ListTasks":  # the handler hands the JSON bindings a plain mapping
        return to_proto(
            ListTasksResponse(
                tasks=result["tasks"],
                next_page_token=result["nextPageToken"],
                page_size=result["pageSize"],
                total_size=result["totalSize"],
            )
        )
    if operation.name == "DeleteTaskPushNotificationConfig":
        return empty_pb2.Empty()  # protobuf's own Empty: no bytes, whichever pool reads it
    raise TypeError(f"{operation.name} returned {type(result).__name__}")


async def _send_extensions(context: Context, call: Call) -> None:
    if call.extensions:
        await context.send_initial_metadata((("a2a-extensions", ",".join(call.extensions)),))


# --- the server ----------------------------------------------------------------------------


def create_server(
    service: Service,
    auth: Authenticator | None = None,
    *,
    require_auth: bool = True,
    options: Mapping[str, Any] | None = None,
    metrics: RequestMetrics | None = None,
) -> grpc.aio.Server:
    """A grpc.aio server with ``A2AService`` registered; bind a port and start it."""
    settings = {
        # Same bound as an HTTP body; a larger message fails with RESOURCE_EXHAUSTED.
        "grpc.max_receive_message_length": service.bounds.max_body_bytes,
        # Ping idle connections every minute so a vanished client's subscriptions close
        # (the task log stays), and accept clients' own keepalive pings down to every 10 s.
        "grpc.keepalive_time_ms": 60_000,
        "grpc.keepalive_timeout_ms": 20_000,
        "grpc.http2.min_ping_interval_without_data_ms": 10_000,
        # gRPC's default SO_REUSEPORT lets a second server bind a port that is in use and
        # share its connections: a busy port must be an error instead.
        "grpc.so_reuseport": 0,
        **(options or {}),
    }
    server = grpc.aio.server(options=list(settings.items()))
    binding = GrpcBinding(service, auth or NoAuthentication(), require_auth, metrics)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE_NAME, binding.handlers()),)
    )
    return server


async def start_server(
    service: Service,
    address: str,
    auth: Authenticator | None = None,
    *,
    require_auth: bool = True,
    metrics: RequestMetrics | None = None,
) -> tuple[grpc.aio.Server, int]:
    """Create, bind (plaintext) and start a server; returns it and the bound port."""
    server = create_server(service, auth, require_auth=require_auth, metrics=metrics)
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"gRPC: cannot bind {address}")
    await server.start()
    return server, port


class WithGrpc:
    """An ASGI wrapper that serves gRPC next to an :class:`A2AApplication`, in its process and
    event loop: the gRPC server starts once the app's startup (the engine) is complete and
    stops, letting calls finish for ``grace`` seconds, before the app's shutdown begins.

    ``uvicorn.run(WithGrpc(app, "127.0.0.1:50051"), lifespan="on", ...)``
    """

    def __init__(self, app: A2AApplication, address: str, *, grace: float = 2.0) -> None:
        self.app = app
        self.address = address
        self.grace = grace
        self.server: grpc.aio.Server | None = None
        self.port: int | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        # When gRPC cannot start, the app is told to shut down (so its engine stops) and its
        # shutdown's completion is reported to the server as the failed startup.
        failure: str | None = None

        async def receive_and_stop() -> Any:
            if failure is not None:
                return {"type": "lifespan.shutdown"}
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                await self.stop()
            return message

        async def start_and_send(message: Any) -> None:
            nonlocal failure
            if message["type"] == "lifespan.startup.complete":
                binding = self.app.jsonrpc
                try:
                    self.server, self.port = await start_server(
                        self.app.service,
                        self.address,
                        binding.auth,
                        require_auth=binding.require_auth,
                        metrics=binding.metrics,
                    )
                except Exception as exc:
                    log.error("gRPC server cannot start on %s: %s", self.address, exc)
                    failure = f"gRPC: {exc}"
                    return
                log.info("gRPC serving lf.a2a.v1.A2AService on %s", self.address)
            elif message["type"] == "lifespan.shutdown.complete" and failure is not None:
                message = {"type": "lifespan.startup.failed", "message": failure}
            await send(message)

        await self.app(scope, receive_and_stop, start_and_send)

    async def stop(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            await server.stop(self.grace)
