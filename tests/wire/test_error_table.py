"""The one error table (A2A v1.0.1, checklist §3) and the details every binding sends."""

from __future__ import annotations

import pytest

from accord.wire._codec import WireError, decode, decode_json
from accord.wire._errors import (
    BAD_REQUEST_TYPE,
    ERROR_INFO_TYPE,
    A2AError,
    ErrorKind,
    FieldViolation,
    invalid_params,
    kind_for_jsonrpc_code,
    kind_for_reason,
)
from accord.wire._model import Message

# Checklist §3, v1.0.1 values: JSON-RPC code, gRPC status, HTTP status, ErrorInfo reason.
A2A_ERRORS = {
    ErrorKind.TASK_NOT_FOUND: (-32001, "NOT_FOUND", 404, "TASK_NOT_FOUND"),
    ErrorKind.TASK_NOT_CANCELABLE: (-32002, "FAILED_PRECONDITION", 400, "TASK_NOT_CANCELABLE"),
    ErrorKind.PUSH_NOT_SUPPORTED: (
        -32003,
        "FAILED_PRECONDITION",
        400,
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    ),
    ErrorKind.UNSUPPORTED_OPERATION: (-32004, "FAILED_PRECONDITION", 400, "UNSUPPORTED_OPERATION"),
    ErrorKind.CONTENT_TYPE_NOT_SUPPORTED: (
        -32005,
        "INVALID_ARGUMENT",
        400,
        "CONTENT_TYPE_NOT_SUPPORTED",
    ),
    ErrorKind.INVALID_AGENT_RESPONSE: (-32006, "INTERNAL", 500, "INVALID_AGENT_RESPONSE"),
    ErrorKind.EXTENDED_CARD_NOT_CONFIGURED: (
        -32007,
        "FAILED_PRECONDITION",
        400,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    ),
    ErrorKind.EXTENSION_SUPPORT_REQUIRED: (
        -32008,
        "FAILED_PRECONDITION",
        400,
        "EXTENSION_SUPPORT_REQUIRED",
    ),
    ErrorKind.VERSION_NOT_SUPPORTED: (-32009, "FAILED_PRECONDITION", 400, "VERSION_NOT_SUPPORTED"),
}
JSONRPC_STANDARD = {
    ErrorKind.PARSE_ERROR: -32700,
    ErrorKind.INVALID_REQUEST: -32600,
    ErrorKind.METHOD_NOT_FOUND: -32601,
    ErrorKind.INVALID_PARAMS: -32602,
    ErrorKind.INTERNAL: -32603,
}


@pytest.mark.parametrize("kind", list(A2A_ERRORS), ids=lambda k: k.name)
def test_a2a_errors_have_the_v1_0_1_codes(kind: ErrorKind) -> None:
    assert (kind.jsonrpc_code, kind.grpc_status, kind.http_status, kind.reason) == A2A_ERRORS[kind]
    assert kind.error_name.endswith("Error")


def test_standard_json_rpc_codes_and_transport_errors() -> None:
    for kind, code in JSONRPC_STANDARD.items():
        assert kind.jsonrpc_code == code
    assert (ErrorKind.INVALID_PARAMS.grpc_status, ErrorKind.INVALID_PARAMS.http_status) == (
        "INVALID_ARGUMENT",
        400,
    )
    assert (ErrorKind.UNAUTHENTICATED.grpc_status, ErrorKind.UNAUTHENTICATED.http_status) == (
        "UNAUTHENTICATED",
        401,
    )
    assert (ErrorKind.PERMISSION_DENIED.grpc_status, ErrorKind.PERMISSION_DENIED.http_status) == (
        "PERMISSION_DENIED",
        403,
    )


def test_the_seeds_errors_are_in_the_table() -> None:
    assert ErrorKind.RESOURCE_EXHAUSTED.grpc_status == "RESOURCE_EXHAUSTED"
    assert ErrorKind.TASK_STATE_CONFLICT.reason == "TASK_STATE_CONFLICT"
    # A context mismatch is invalid params on every binding (checklist §4, §9.5).
    for kind in (ErrorKind.CONTEXT_MISMATCH, ErrorKind.CONTEXT_NOT_ACCEPTED):
        assert (kind.jsonrpc_code, kind.grpc_status, kind.http_status) == (
            -32602,
            "INVALID_ARGUMENT",
            400,
        )


def test_lookups_find_the_a2a_rows() -> None:
    for kind, (_, _, _, reason) in A2A_ERRORS.items():
        assert kind_for_reason(reason) is kind
    for kind in ErrorKind:
        assert kind_for_reason(kind.reason) in (kind, ErrorKind.CONTENT_TYPE_NOT_SUPPORTED)
    for kind, (code, *_) in A2A_ERRORS.items():
        assert kind_for_jsonrpc_code(code) is kind
    assert kind_for_jsonrpc_code(-32602) is not None
    assert kind_for_reason("NO_SUCH_REASON") is None
    assert kind_for_jsonrpc_code(-1) is None


def test_details_carry_error_info_then_bad_request() -> None:
    error = A2AError(
        ErrorKind.TASK_NOT_FOUND, "task 't' not found", {"taskId": "t"}, [FieldViolation("id", "x")]
    )
    assert error.details() == [
        {
            "@type": ERROR_INFO_TYPE,
            "reason": "TASK_NOT_FOUND",
            "domain": "a2a-protocol.org",
            "metadata": {"taskId": "t"},
        },
        {"@type": BAD_REQUEST_TYPE, "fieldViolations": [{"field": "id", "description": "x"}]},
    ]
    assert A2AError(ErrorKind.INTERNAL, "boom").details() == [
        {"@type": ERROR_INFO_TYPE, "reason": "INTERNAL", "domain": "a2a-protocol.org"}
    ]
    assert str(error) == "TASK_NOT_FOUND: task 't' not found"


def test_invalid_params_names_one_field() -> None:
    error = invalid_params("message.parts[0].content", "exactly one content")
    assert error.kind is ErrorKind.INVALID_PARAMS
    assert error.violations == [FieldViolation("message.parts[0].content", "exactly one content")]
    assert error.message == "message.parts[0].content: exactly one content"


def test_malformed_json_is_a_parse_error_on_every_path() -> None:
    for data in (b'{"messageId": ', b'{"message_id": "m", ', b"\xff"):
        with pytest.raises(WireError) as caught:
            decode(data, Message)
        assert caught.value.parse_error
    with pytest.raises(WireError) as caught:
        decode_json(b"[1,")
    assert caught.value.parse_error
    assert decode_json(b'{"a_b": [1]}') == {"a_b": [1]}
