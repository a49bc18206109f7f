"""How each binding writes an error from the one table."""

from __future__ import annotations

from typing import Any

from accord.engine import failure_error
from accord.wire import A2AError, ErrorKind, FieldViolation, WireError


def from_wire_error(error: WireError) -> A2AError:
    """A request that did not decode: a parse error, or invalid params naming the field."""
    if error.parse_error:
        return A2AError(ErrorKind.PARSE_ERROR, error.description)
    return A2AError(
        ErrorKind.INVALID_PARAMS,
        str(error),
        violations=[FieldViolation(error.field, error.description)],
    )


def internal_error() -> A2AError:
    """What a caller sees of an unexpected failure: nothing of its internals."""
    return A2AError(ErrorKind.INTERNAL, "internal error")


def unexpected_error(exc: BaseException) -> A2AError:
    """What a caller sees of an exception no A2AError names: UNAVAILABLE (try again) when the
    store cannot read or write now, else the internal error."""
    return failure_error(exc) or internal_error()


def http_answer(error: A2AError, *, jsonrpc: bool) -> tuple[int, list[tuple[bytes, bytes]]]:
    """The HTTP status and added headers of an error answer. JSON-RPC answers its errors with
    200, except one the caller should send again later (``retry_after_s``): that is 503 with
    ``Retry-After`` on both HTTP bindings, so HTTP clients, proxies and load balancers see
    it for what it is, and the JSON-RPC body still names the error."""
    if error.retry_after_s is not None:
        return error.kind.http_status, [(b"retry-after", b"%d" % error.retry_after_s)]
    return (200 if jsonrpc else error.kind.http_status), []


def jsonrpc_error(error: A2AError) -> dict[str, Any]:
    return {"code": error.kind.jsonrpc_code, "message": error.message, "data": error.details()}


def rest_error(error: A2AError) -> dict[str, Any]:
    status = error.kind.http_status
    return {
        "error": {
            "code": status,
            "status": error.kind.grpc_status,
            "message": error.message,
            "details": error.details(),
        }
    }
