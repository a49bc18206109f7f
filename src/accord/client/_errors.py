"""What the client raises.

Two families under one root, :class:`ClientError`:

* :class:`A2AClientError`: the agent answered with a protocol error. There is one subclass per
  row of :class:`accord.wire._errors.ErrorKind` (``TaskNotFoundError``, ...), whatever binding it
  came over. Each carries ``kind``, ``message`` and ``details`` (the ``google.rpc`` detail
  objects as ProtoJSON dicts). ``kind`` is ``None`` only for an error the table does not know.
* :class:`TransportError`: the call did not get a protocol answer (connection refused,
  timeout, an HTTP status without an A2A error body, a body that is not A2A, a stream cut off).

Any of them may carry ``retry_after``: the seconds the server asked the client to wait before
sending the request again (HTTP ``Retry-After``, or a ``google.rpc.RetryInfo`` detail).

The ``*_from_*`` functions build an :class:`A2AClientError` from each binding's error shape,
using the ``google.rpc.ErrorInfo`` reason first and the binding's code only as a fallback.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar

from accord.errors import AccordError
from accord.wire import ERROR_INFO_TYPE, RETRY_INFO_TYPE, ErrorKind

__all__ = [
    "ERROR_CLASSES",
    "A2AClientError",
    "CardSignatureError",
    "ClientError",
    "ConnectionFailedError",
    "ContentTypeNotSupportedError",
    "ContextMismatchError",
    "ContextNotAcceptedError",
    "ExtendedAgentCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "GrpcPortError",
    "InternalError",
    "InvalidAgentResponseError",
    "InvalidParamsError",
    "InvalidRequestError",
    "InvalidResponseError",
    "InvalidURLError",
    "JSONParseError",
    "MethodNotFoundError",
    "NoCompatibleInterfaceError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PushNotificationNotSupportedError",
    "RequestTimeoutError",
    "ResourceExhaustedError",
    "StreamBrokenError",
    "TaskGenerationMismatchError",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "TaskStateConflictError",
    "TransportError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnexpectedStatusError",
    "UnsupportedOperationError",
    "VersionNotSupportedError",
    "error_from_grpc",
    "error_from_jsonrpc",
    "error_from_rest",
    "make_error",
]


class ClientError(AccordError):
    """Root of everything the client raises."""

    # Seconds the server asked to wait before the request is sent again (None: it did not).
    retry_after: float | None = None


class NoCompatibleInterfaceError(ClientError):
    """The agent card offers no interface this client can use (or not the one forced)."""


class CardSignatureError(ClientError):
    """The card was to be verified (``verify_card``), and no signature of it holds."""


class InvalidURLError(ClientError, ValueError):
    """An agent URL that cannot be used: not http(s), no host, a bad port, an IPv6 address
    without brackets."""

    def __init__(self, url: str, problem: str) -> None:
        super().__init__(f"invalid URL {url!r}: {problem}")
        self.url = url
        self.problem = problem


# --- protocol errors ---------------------------------------------------------------------------


class A2AClientError(ClientError):
    """The agent answered with an A2A error."""

    kind_for_class: ClassVar[ErrorKind | None] = None

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind | None = None,
        details: Sequence[Mapping[str, Any]] = (),
        code: int | str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind if kind is not None else self.kind_for_class
        self.message = message
        self.details: list[dict[str, Any]] = [dict(d) for d in details]
        self.code = code  # the binding's own code: JSON-RPC code, HTTP status or gRPC status
        self.retry_after = _retry_delay(self.details)

    def __str__(self) -> str:
        name = self.kind.error_name if self.kind is not None else "A2AError"
        return f"{name}: {self.message}"

    @property
    def error_info(self) -> dict[str, Any] | None:
        for detail in self.details:
            if _is_error_info(detail):
                return detail
        return None

    @property
    def reason(self) -> str:
        info = self.error_info
        return str(info.get("reason", "")) if info else ""

    @property
    def metadata(self) -> dict[str, Any]:
        """The ErrorInfo metadata (string values per google.rpc, but kept as sent)."""
        info = self.error_info
        meta = info.get("metadata") if info else None
        return dict(meta) if isinstance(meta, dict) else {}

    @property
    def field_violations(self) -> list[tuple[str, str]]:
        """(field, description) pairs from a ``google.rpc.BadRequest`` detail."""
        out: list[tuple[str, str]] = []
        for detail in self.details:
            if str(detail.get("@type", "")).endswith("google.rpc.BadRequest"):
                for v in detail.get("fieldViolations") or []:
                    if isinstance(v, dict):
                        out.append((str(v.get("field", "")), str(v.get("description", ""))))
        return out


class TaskNotFoundError(A2AClientError):
    kind_for_class = ErrorKind.TASK_NOT_FOUND


class TaskNotCancelableError(A2AClientError):
    kind_for_class = ErrorKind.TASK_NOT_CANCELABLE


class PushNotificationNotSupportedError(A2AClientError):
    kind_for_class = ErrorKind.PUSH_NOT_SUPPORTED


class UnsupportedOperationError(A2AClientError):
    kind_for_class = ErrorKind.UNSUPPORTED_OPERATION


class ContentTypeNotSupportedError(A2AClientError):
    kind_for_class = ErrorKind.CONTENT_TYPE_NOT_SUPPORTED


class InvalidAgentResponseError(A2AClientError):
    kind_for_class = ErrorKind.INVALID_AGENT_RESPONSE


class ExtendedAgentCardNotConfiguredError(A2AClientError):
    kind_for_class = ErrorKind.EXTENDED_CARD_NOT_CONFIGURED


class ExtensionSupportRequiredError(A2AClientError):
    kind_for_class = ErrorKind.EXTENSION_SUPPORT_REQUIRED


class VersionNotSupportedError(A2AClientError):
    kind_for_class = ErrorKind.VERSION_NOT_SUPPORTED


class ResourceExhaustedError(A2AClientError):
    kind_for_class = ErrorKind.RESOURCE_EXHAUSTED


class TaskStateConflictError(A2AClientError):
    kind_for_class = ErrorKind.TASK_STATE_CONFLICT


class TaskGenerationMismatchError(A2AClientError):
    """A2A 1.1 preview: ``ifGenerationMatch`` was not the task's generation."""

    kind_for_class = ErrorKind.TASK_GENERATION_MISMATCH


class ContextMismatchError(A2AClientError):
    kind_for_class = ErrorKind.CONTEXT_MISMATCH


class ContextNotAcceptedError(A2AClientError):
    kind_for_class = ErrorKind.CONTEXT_NOT_ACCEPTED


class JSONParseError(A2AClientError):
    kind_for_class = ErrorKind.PARSE_ERROR


class InvalidRequestError(A2AClientError):
    kind_for_class = ErrorKind.INVALID_REQUEST


class MethodNotFoundError(A2AClientError):
    kind_for_class = ErrorKind.METHOD_NOT_FOUND


class InvalidParamsError(A2AClientError):
    kind_for_class = ErrorKind.INVALID_PARAMS


class InternalError(A2AClientError):
    kind_for_class = ErrorKind.INTERNAL


class UnauthenticatedError(A2AClientError):
    kind_for_class = ErrorKind.UNAUTHENTICATED


class PermissionDeniedError(A2AClientError):
    kind_for_class = ErrorKind.PERMISSION_DENIED


class PayloadTooLargeError(A2AClientError):
    kind_for_class = ErrorKind.PAYLOAD_TOO_LARGE


class UnavailableError(A2AClientError):
    """The server cannot answer now (its store cannot read or write); the same request may
    pass later (``retry_after``). The client sends it again by itself (RetryPolicy)."""

    kind_for_class = ErrorKind.UNAVAILABLE


_CLASS_BY_NAME = {cls.__name__: cls for cls in A2AClientError.__subclasses__()}

# Rows sharing an error name (a 415 variant of ContentTypeNotSupportedError) share a class.
ERROR_CLASSES: dict[ErrorKind, type[A2AClientError]] = {
    kind: _CLASS_BY_NAME[kind.error_name] for kind in ErrorKind
}


# --- transport errors --------------------------------------------------------------------------


class TransportError(ClientError):
    """The call got no protocol answer."""


class ConnectionFailedError(TransportError):
    """Could not connect, or the connection failed while sending or receiving."""


class GrpcPortError(ConnectionFailedError):
    """The address answers HTTP/2 only: a gRPC port, where no agent card is served (the card
    is on the agent's HTTP URL; the gRPC binding is chosen from it)."""

    def __init__(self, origin: str) -> None:
        super().__init__(
            f"{origin}: this is a gRPC port: connect to the agent's HTTP URL (its card is "
            "served over HTTP, not gRPC) and choose the gRPC binding"
        )
        self.origin = origin


class RequestTimeoutError(TransportError):
    """A timeout expired (connect, read, or a stream idle for longer than allowed)."""


class UnexpectedStatusError(TransportError):
    """An HTTP status the binding does not define, without an A2A error body."""

    def __init__(self, status_code: int, body: str, url: str = "") -> None:
        snippet = body if len(body) <= 200 else body[:200] + "..."
        where = f" from {url}" if url else ""
        super().__init__(f"unexpected HTTP status {status_code}{where}: {snippet}".rstrip(": "))
        self.status_code = status_code
        self.body = body
        self.url = url


class InvalidResponseError(TransportError):
    """The peer answered with something that is not a valid A2A response."""


class StreamBrokenError(TransportError):
    """A stream ended before its task reached a final state, and could not be resumed."""


# --- building protocol errors from each binding's shape ----------------------------------------

# Several rows may share a reason or a code; the first row declared is the canonical one,
# except that a bare -32602 means the generic invalid-params error.
_BY_REASON: dict[str, ErrorKind] = {}
_BY_CODE: dict[int, ErrorKind] = {ErrorKind.INVALID_PARAMS.jsonrpc_code: ErrorKind.INVALID_PARAMS}
for _kind in ErrorKind:
    _BY_REASON.setdefault(_kind.reason, _kind)
    _BY_CODE.setdefault(_kind.jsonrpc_code, _kind)

# REST bodies without an ErrorInfo: only statuses that name one error unambiguously.
_HTTP_FALLBACK = {
    401: ErrorKind.UNAUTHENTICATED,
    403: ErrorKind.PERMISSION_DENIED,
    409: ErrorKind.TASK_STATE_CONFLICT,
    413: ErrorKind.PAYLOAD_TOO_LARGE,
    429: ErrorKind.RESOURCE_EXHAUSTED,
    500: ErrorKind.INTERNAL,
    503: ErrorKind.UNAVAILABLE,
}

# gRPC statuses without an ErrorInfo, likewise.
_GRPC_FALLBACK = {
    "UNAUTHENTICATED": ErrorKind.UNAUTHENTICATED,
    "PERMISSION_DENIED": ErrorKind.PERMISSION_DENIED,
    "RESOURCE_EXHAUSTED": ErrorKind.RESOURCE_EXHAUSTED,
    "INTERNAL": ErrorKind.INTERNAL,
    "UNIMPLEMENTED": ErrorKind.METHOD_NOT_FOUND,
    "INVALID_ARGUMENT": ErrorKind.INVALID_PARAMS,
    "UNAVAILABLE": ErrorKind.UNAVAILABLE,
}


def _retry_delay(details: Sequence[Mapping[str, Any]]) -> float | None:
    """The seconds of a ``google.rpc.RetryInfo`` detail's ``retryDelay`` ("1s", "0.5s")."""
    for detail in details:
        kind = str(detail.get("@type", ""))
        if kind not in (RETRY_INFO_TYPE, "google.rpc.RetryInfo") and not kind.endswith(
            "/google.rpc.RetryInfo"
        ):
            continue
        delay = detail.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                seconds = float(delay[:-1])
            except ValueError:
                return None
            return seconds if 0 <= seconds < float("inf") else None
        if isinstance(delay, dict):  # (a Duration as a message: seconds and nanos)
            try:
                seconds = float(delay.get("seconds", 0)) + float(delay.get("nanos", 0)) / 1e9
            except (TypeError, ValueError):
                return None
            return seconds if 0 <= seconds < float("inf") else None
    return None


def retry_after_header(value: str | None, now: float | None = None) -> float | None:
    """The seconds an HTTP ``Retry-After`` asks for: a number of seconds or an HTTP date
    (None when absent or unreadable)."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value) if len(value) < 12 else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _is_error_info(detail: Mapping[str, Any]) -> bool:
    return str(detail.get("@type", "")) in (ERROR_INFO_TYPE, "google.rpc.ErrorInfo") or str(
        detail.get("@type", "")
    ).endswith("/google.rpc.ErrorInfo")


def _details(raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, list):
        return [d for d in raw if isinstance(d, dict)]
    if isinstance(raw, dict):
        return [raw]
    return []


def _kind_from_details(details: list[dict[str, Any]]) -> ErrorKind | None:
    for detail in details:
        if _is_error_info(detail):
            reason = detail.get("reason")
            if isinstance(reason, str):
                return _BY_REASON.get(reason)
    return None


def make_error(
    kind: ErrorKind | None,
    message: str,
    details: Sequence[Mapping[str, Any]] = (),
    code: int | str | None = None,
) -> A2AClientError:
    """The typed exception for ``kind`` (the base class when ``kind`` is unknown)."""
    cls = ERROR_CLASSES.get(kind, A2AClientError) if kind is not None else A2AClientError
    return cls(
        message or (kind.error_name if kind else "error"), kind=kind, details=details, code=code
    )


def error_from_jsonrpc(error: Any) -> A2AClientError:
    """From a JSON-RPC ``error`` object: ``{"code", "message", "data"}``."""
    if not isinstance(error, dict):
        return make_error(None, f"malformed JSON-RPC error: {error!r}")
    code = error.get("code")
    message = str(error.get("message") or "")
    details = _details(error.get("data"))
    kind = _kind_from_details(details)
    if kind is None and isinstance(code, int):
        kind = _BY_CODE.get(code)
    return make_error(kind, message, details, code if isinstance(code, int) else None)


def is_rest_error_body(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("error"), dict)


def error_from_rest(body: Any, http_status: int) -> A2AClientError:
    """From a REST error body ``{"error": {"code", "status", "message", "details"}}``."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return make_error(_HTTP_FALLBACK.get(http_status), f"HTTP {http_status}", (), http_status)
    details = _details(error.get("details"))
    kind = _kind_from_details(details) or _HTTP_FALLBACK.get(http_status)
    if kind is None and isinstance(error.get("status"), str):
        kind = _GRPC_FALLBACK.get(error["status"])
    return make_error(kind, str(error.get("message") or ""), details, http_status)


def error_from_grpc(
    status: str, message: str, details: Sequence[Mapping[str, Any]]
) -> A2AClientError:
    """From a gRPC status name, its message and the rich-status details (as ProtoJSON dicts)."""
    found = _details(list(details))
    kind = _kind_from_details(found) or _GRPC_FALLBACK.get(status)
    return make_error(kind, message, found, status)


def error_for_http_status(status: int) -> A2AClientError | None:
    """An auth failure answered with a bare 401/403 (no A2A body), e.g. by a proxy."""
    if status in (401, 403):
        return make_error(_HTTP_FALLBACK[status], f"HTTP {status}", (), status)
    return None
