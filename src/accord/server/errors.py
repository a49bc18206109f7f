"""How each binding writes an error from the one table."""

from __future__ import annotations

from typing import Any

from accord.wire.codec import WireError
from accord.wire.errors import A2AError, ErrorKind, FieldViolation


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
