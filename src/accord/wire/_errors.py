"""The one error table: every A2A error, with its code on each binding.

An error is decided once (in the core or at the edge) as an :class:`A2AError` naming a row of
this table; each binding maps the row to its own representation. Values follow A2A v1.0.1
(where v1.0.0 and v1.0.1 differ, v1.0.1 wins); the seed's own errors
(``ResourceExhausted``, ``TaskStateConflict``, ``ContextMismatch``, ``ContextNotAccepted``) use
codes from the JSON-RPC server-error range that A2A leaves free.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from accord.errors import AccordError

ERROR_DOMAIN = "a2a-protocol.org"
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"
RETRY_INFO_TYPE = "type.googleapis.com/google.rpc.RetryInfo"


@dataclass(frozen=True, slots=True)
class ErrorRow:
    name: str
    jsonrpc_code: int
    grpc_status: str
    http_status: int
    reason: str


class ErrorKind(enum.Enum):
    """One row of the table per error; the value is its codes on every binding."""

    value: ErrorRow

    @property
    def error_name(self) -> str:
        return self.value.name

    @property
    def jsonrpc_code(self) -> int:
        return self.value.jsonrpc_code

    @property
    def grpc_status(self) -> str:
        return self.value.grpc_status

    @property
    def http_status(self) -> int:
        return self.value.http_status

    @property
    def reason(self) -> str:
        return self.value.reason

    TASK_NOT_FOUND = ErrorRow("TaskNotFoundError", -32001, "NOT_FOUND", 404, "TASK_NOT_FOUND")
    TASK_NOT_CANCELABLE = ErrorRow(
        "TaskNotCancelableError", -32002, "FAILED_PRECONDITION", 400, "TASK_NOT_CANCELABLE"
    )
    PUSH_NOT_SUPPORTED = ErrorRow(
        "PushNotificationNotSupportedError",
        -32003,
        "FAILED_PRECONDITION",
        400,
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    )
    UNSUPPORTED_OPERATION = ErrorRow(
        "UnsupportedOperationError", -32004, "FAILED_PRECONDITION", 400, "UNSUPPORTED_OPERATION"
    )
    CONTENT_TYPE_NOT_SUPPORTED = ErrorRow(
        "ContentTypeNotSupportedError",
        -32005,
        "INVALID_ARGUMENT",
        400,
        "CONTENT_TYPE_NOT_SUPPORTED",
    )
    INVALID_AGENT_RESPONSE = ErrorRow(
        "InvalidAgentResponseError", -32006, "INTERNAL", 500, "INVALID_AGENT_RESPONSE"
    )
    EXTENDED_CARD_NOT_CONFIGURED = ErrorRow(
        "ExtendedAgentCardNotConfiguredError",
        -32007,
        "FAILED_PRECONDITION",
        400,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    )
    EXTENSION_SUPPORT_REQUIRED = ErrorRow(
        "ExtensionSupportRequiredError",
        -32008,
        "FAILED_PRECONDITION",
        400,
        "EXTENSION_SUPPORT_REQUIRED",
    )
    VERSION_NOT_SUPPORTED = ErrorRow(
        "VersionNotSupportedError", -32009, "FAILED_PRECONDITION", 400, "VERSION_NOT_SUPPORTED"
    )
    # The request body's own media type (HTTP level): 415, as HTTP defines it.
    UNSUPPORTED_MEDIA_TYPE = ErrorRow(
        "ContentTypeNotSupportedError",
        -32005,
        "INVALID_ARGUMENT",
        415,
        "CONTENT_TYPE_NOT_SUPPORTED",
    )
    # The seed's errors.
    RESOURCE_EXHAUSTED = ErrorRow(
        "ResourceExhaustedError", -32010, "RESOURCE_EXHAUSTED", 429, "RESOURCE_EXHAUSTED"
    )
    # A2A 1.1 preview (dev-1.1 branch): SendMessageConfiguration.ifGenerationMatch is not the
    # task's generation. Its JSON-RPC code is the seed's ResourceExhausted's too: a code alone
    # still means ResourceExhausted (the first row), the ErrorInfo reason tells them apart.
    TASK_GENERATION_MISMATCH = ErrorRow(
        "TaskGenerationMismatchError", -32010, "ABORTED", 409, "TASK_GENERATION_MISMATCH"
    )
    TASK_STATE_CONFLICT = ErrorRow(
        "TaskStateConflictError", -32011, "FAILED_PRECONDITION", 409, "TASK_STATE_CONFLICT"
    )
    CONTEXT_MISMATCH = ErrorRow(
        "ContextMismatchError", -32602, "INVALID_ARGUMENT", 400, "CONTEXT_MISMATCH"
    )
    CONTEXT_NOT_ACCEPTED = ErrorRow(
        "ContextNotAcceptedError", -32602, "INVALID_ARGUMENT", 400, "CONTEXT_NOT_ACCEPTED"
    )
    # JSON-RPC 2.0 and transport-level errors.
    PARSE_ERROR = ErrorRow("JSONParseError", -32700, "INVALID_ARGUMENT", 400, "PARSE_ERROR")
    INVALID_REQUEST = ErrorRow(
        "InvalidRequestError", -32600, "INVALID_ARGUMENT", 400, "INVALID_REQUEST"
    )
    METHOD_NOT_FOUND = ErrorRow(
        "MethodNotFoundError", -32601, "UNIMPLEMENTED", 404, "METHOD_NOT_FOUND"
    )
    INVALID_PARAMS = ErrorRow(
        "InvalidParamsError", -32602, "INVALID_ARGUMENT", 400, "INVALID_PARAMS"
    )
    INTERNAL = ErrorRow("InternalError", -32603, "INTERNAL", 500, "INTERNAL")
    UNAUTHENTICATED = ErrorRow(
        "UnauthenticatedError", -32012, "UNAUTHENTICATED", 401, "UNAUTHENTICATED"
    )
    PERMISSION_DENIED = ErrorRow(
        "PermissionDeniedError", -32013, "PERMISSION_DENIED", 403, "PERMISSION_DENIED"
    )
    PAYLOAD_TOO_LARGE = ErrorRow(
        "PayloadTooLargeError", -32602, "INVALID_ARGUMENT", 413, "PAYLOAD_TOO_LARGE"
    )
    # The server cannot answer now (its store cannot read or write: database down, disk
    # full); the same request may succeed later. Every binding says "retry": HTTP 503 with
    # Retry-After (JSON-RPC too, see accord.server._errors), gRPC UNAVAILABLE, and a
    # google.rpc.RetryInfo detail.
    UNAVAILABLE = ErrorRow("UnavailableError", -32014, "UNAVAILABLE", 503, "UNAVAILABLE")


# Rows sharing a reason or a code (UNSUPPORTED_MEDIA_TYPE is ContentTypeNotSupported at the
# transport) resolve to the first, the A2A error.
_BY_REASON: dict[str, ErrorKind] = {}
_BY_JSONRPC_CODE: dict[int, ErrorKind] = {}
for _kind in ErrorKind:
    _BY_REASON.setdefault(_kind.reason, _kind)
    _BY_JSONRPC_CODE.setdefault(_kind.jsonrpc_code, _kind)
# Where rows share a code, a peer's bare code means the protocol's own error.
_BY_JSONRPC_CODE[ErrorKind.INVALID_PARAMS.jsonrpc_code] = ErrorKind.INVALID_PARAMS


def kind_for_reason(reason: str) -> ErrorKind | None:
    return _BY_REASON.get(reason)


def kind_for_jsonrpc_code(code: int) -> ErrorKind | None:
    return _BY_JSONRPC_CODE.get(code)


@dataclass(frozen=True, slots=True)
class FieldViolation:
    field: str
    description: str


@dataclass(eq=False)
class A2AError(AccordError):
    """An error the protocol defines, ready for any binding to encode. ``retry_after_s``:
    the request may be sent again after that many seconds (a ``RetryInfo`` detail; HTTP
    ``Retry-After``)."""

    kind: ErrorKind
    message: str
    metadata: dict[str, str] = field(default_factory=dict)
    violations: list[FieldViolation] = field(default_factory=list)
    retry_after_s: int | None = None

    def __post_init__(self) -> None:
        Exception.__init__(self, self.message)

    def __str__(self) -> str:
        return f"{self.kind.name}: {self.message}"

    def details(self) -> list[dict[str, Any]]:
        """``google.rpc`` details as ProtoJSON ``Any`` objects: ErrorInfo, then BadRequest
        and RetryInfo when there are any."""
        info: dict[str, Any] = {
            "@type": ERROR_INFO_TYPE,
            "reason": self.kind.reason,
            "domain": ERROR_DOMAIN,
        }
        if self.metadata:
            info["metadata"] = dict(self.metadata)
        out = [info]
        if self.violations:
            out.append(
                {
                    "@type": BAD_REQUEST_TYPE,
                    "fieldViolations": [
                        {"field": v.field, "description": v.description} for v in self.violations
                    ],
                }
            )
        if self.retry_after_s is not None:
            out.append({"@type": RETRY_INFO_TYPE, "retryDelay": f"{self.retry_after_s}s"})
        return out


def invalid_params(field_path: str, description: str) -> A2AError:
    """A validation error naming one field."""
    message = f"{field_path}: {description}" if field_path else description
    return A2AError(
        ErrorKind.INVALID_PARAMS, message, violations=[FieldViolation(field_path, description)]
    )


def task_not_found(task_id: str) -> A2AError:
    return A2AError(ErrorKind.TASK_NOT_FOUND, f"task {task_id!r} not found", {"taskId": task_id})
