"""Every binding's error shape becomes the same typed exception."""

from __future__ import annotations

import pytest

from accord.client import _errors as e
from accord.wire._errors import ERROR_INFO_TYPE, ErrorKind


def info(reason: str, **metadata: str) -> dict[str, object]:
    return {
        "@type": ERROR_INFO_TYPE,
        "reason": reason,
        "domain": "a2a-protocol.org",
        "metadata": metadata,
    }


def test_one_class_per_error_kind_all_under_one_base() -> None:
    assert set(e.ERROR_CLASSES) == set(ErrorKind)
    for kind, cls in e.ERROR_CLASSES.items():
        assert issubclass(cls, e.A2AClientError)
        assert cls.__name__ == kind.error_name
        default_kind = cls("x").kind
        assert default_kind is not None and default_kind.error_name == kind.error_name


@pytest.mark.parametrize("kind", list(ErrorKind))
def test_jsonrpc_error_by_reason(kind: ErrorKind) -> None:
    error = e.error_from_jsonrpc(
        {"code": kind.jsonrpc_code, "message": "m", "data": [info(kind.reason)]}
    )
    assert type(error) is e.ERROR_CLASSES[kind]
    assert error.kind is not None and error.kind.reason == kind.reason
    assert error.message == "m" and error.reason == kind.reason


@pytest.mark.parametrize("kind", list(ErrorKind))
def test_rest_error_by_reason(kind: ErrorKind) -> None:
    body = {
        "error": {
            "code": kind.http_status,
            "status": kind.grpc_status,
            "message": "m",
            "details": [info(kind.reason)],
        }
    }
    error = e.error_from_rest(body, kind.http_status)
    assert type(error) is e.ERROR_CLASSES[kind]
    assert error.code == kind.http_status


@pytest.mark.parametrize("kind", list(ErrorKind))
def test_grpc_error_by_reason(kind: ErrorKind) -> None:
    error = e.error_from_grpc(kind.grpc_status, "m", [info(kind.reason)])
    assert type(error) is e.ERROR_CLASSES[kind]


def test_reason_wins_over_code() -> None:
    error = e.error_from_jsonrpc({"code": -32602, "message": "m", "data": [info("TASK_NOT_FOUND")]})
    assert isinstance(error, e.TaskNotFoundError)


def test_jsonrpc_code_is_the_fallback() -> None:
    assert isinstance(e.error_from_jsonrpc({"code": -32001, "message": "m"}), e.TaskNotFoundError)
    assert isinstance(e.error_from_jsonrpc({"code": -32601, "message": "m"}), e.MethodNotFoundError)
    # -32602 is shared by several rows; a bare code is the generic invalid-params error
    assert isinstance(e.error_from_jsonrpc({"code": -32602, "message": "m"}), e.InvalidParamsError)


def test_unknown_code_and_reason_give_the_base_class() -> None:
    error = e.error_from_jsonrpc({"code": -31999, "message": "odd", "data": [info("NOPE")]})
    assert type(error) is e.A2AClientError
    assert error.kind is None and error.code == -31999 and error.message == "odd"


def test_details_metadata_and_field_violations() -> None:
    error = e.error_from_jsonrpc(
        {
            "code": -32602,
            "message": "Validation failed",
            "data": [
                info("INVALID_PARAMS", hint="x"),
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [{"field": "message.parts", "description": "empty"}],
                },
            ],
        }
    )
    assert isinstance(error, e.InvalidParamsError)
    assert error.metadata == {"hint": "x"}
    assert error.field_violations == [("message.parts", "empty")]
    assert len(error.details) == 2
    assert str(error) == "InvalidParamsError: Validation failed"


def test_rest_without_error_info_falls_back_on_unambiguous_statuses() -> None:
    assert isinstance(e.error_from_rest({"error": {"message": "no"}}, 401), e.UnauthenticatedError)
    generic = e.error_from_rest({"error": {"code": 400, "message": "bad"}}, 400)
    assert type(generic) is e.A2AClientError and generic.message == "bad"
    by_status = e.error_from_rest({"error": {"status": "INVALID_ARGUMENT", "message": "x"}}, 400)
    assert isinstance(by_status, e.InvalidParamsError)


def test_grpc_status_fallback() -> None:
    assert isinstance(e.error_from_grpc("UNAUTHENTICATED", "who?", []), e.UnauthenticatedError)
    assert type(e.error_from_grpc("NOT_FOUND", "?", [])) is e.A2AClientError


def test_protocol_and_transport_errors_share_the_root_only() -> None:
    assert issubclass(e.A2AClientError, e.ClientError)
    assert issubclass(e.TransportError, e.ClientError)
    assert not issubclass(e.TransportError, e.A2AClientError)
    status = e.UnexpectedStatusError(502, "Bad gateway", "http://x")
    assert status.status_code == 502 and "502" in str(status)


def test_the_wait_a_server_asks_for_is_read_from_retry_info_and_retry_after() -> None:
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}
    error = e.error_from_jsonrpc({"code": -32014, "message": "later", "data": [retry_info]})
    assert isinstance(error, e.UnavailableError)
    assert error.retry_after == 1.5
    assert e.make_error(ErrorKind.INTERNAL, "boom").retry_after is None
    assert e.retry_after_header("2") == 2.0
    assert e.retry_after_header("Wed, 21 Oct 2026 07:28:10 GMT", now=1792567680.0) == 10.0
    assert e.retry_after_header("soon") is None
    assert e.retry_after_header("9" * 20) is None
    assert e.retry_after_header(None) is None
