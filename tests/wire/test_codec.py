"""The ProtoJSON codec: names, enums, oneofs, presence, bytes, timestamps and error paths."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

import accord.wire._time
from accord.wire import WireError, convert, decode, encode, to_builtins
from accord.wire import _model as w
from accord.wire._time import format_timestamp, parse_timestamp


def _message(**extra: Any) -> dict[str, Any]:
    return {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}], **extra}


def _error(data: Any, type_: type[Any]) -> WireError:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    with pytest.raises(WireError) as caught:
        decode(raw, type_)
    return caught.value


# --- names ---------------------------------------------------------------------------------


def test_encodes_camel_case_names() -> None:
    request = w.SendMessageRequest(
        message=w.Message(
            message_id="m-1",
            role=w.Role.USER,
            parts=[w.Part(text="hi", media_type="text/plain")],
            context_id="c-1",
            reference_task_ids=["t-0"],
        ),
        configuration=w.SendMessageConfiguration(
            accepted_output_modes=["text/plain"], history_length=2
        ),
    )
    assert json.loads(encode(request)) == {
        "message": {
            "messageId": "m-1",
            "role": "ROLE_USER",
            "parts": [{"text": "hi", "mediaType": "text/plain"}],
            "contextId": "c-1",
            "referenceTaskIds": ["t-0"],
        },
        "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 2},
    }
    assert to_builtins(request) == json.loads(encode(request))


def test_decodes_snake_case_and_camel_case_alike() -> None:
    camel = {
        "message": _message(contextId="c-1", taskId="t-1"),
        "configuration": {"historyLength": 3, "returnImmediately": True},
    }
    snake = {
        "message": {
            "message_id": "m-1",
            "role": "ROLE_USER",
            "parts": [{"text": "hi"}],
            "context_id": "c-1",
            "task_id": "t-1",
        },
        "configuration": {"history_length": 3, "return_immediately": True},
    }
    from_camel = decode(json.dumps(camel), w.SendMessageRequest)
    from_snake = decode(json.dumps(snake), w.SendMessageRequest)
    assert from_camel == from_snake
    assert from_snake.message.task_id == "t-1"
    assert from_snake.configuration is not w.UNSET
    assert from_snake.configuration.history_length == 3
    assert convert(snake, w.SendMessageRequest) == from_camel


@pytest.mark.parametrize(
    ("doc", "type_", "attr", "value"),
    [
        (b'{"id": "t", "history_length" : 2}', w.GetTaskRequest, "history_length", 2),
        (
            b'{"flows": {"implicit": {}}, "oauth2_metadata_url": "u"}',
            w.OAuth2SecurityScheme,
            "oauth2_metadata_url",
            "u",
        ),
        (b'{"open_id_connect_url":"x"}', w.OpenIdConnectSecurityScheme, "open_id_connect_url", "x"),
        (  # underscores in values before the key
            b'{"role": "ROLE_USER", "parts": [{"text": "a_b"}], "message_id": "m-1"}',
            w.Message,
            "message_id",
            "m-1",
        ),
        (
            json.dumps({"text": 'a_b"_c": "', "media_type": "t/p"}).encode(),
            w.Part,
            "media_type",
            "t/p",
        ),
        (  # a free-form snake_case key first, then a field's
            json.dumps({"text": "x", "metadata": {"my_key": 1}, "media_type": "t/p"}).encode(),
            w.Part,
            "media_type",
            "t/p",
        ),
    ],
)
def test_a_single_snake_case_key_anywhere_is_read(
    doc: bytes, type_: type[Any], attr: str, value: Any
) -> None:
    assert getattr(decode(doc, type_), attr) == value


@pytest.mark.parametrize("run", [b"_", b"_a", b"a_", b"_A"])
def test_long_runs_of_underscores_are_read_in_linear_time(run: bytes) -> None:
    # Reading a run again from each underscore in it took ~1 s for 40,000 of them and grows
    # with the square: a 10 MiB request body would hold the event loop for hours.
    size = 4 * 1024 * 1024 // len(run)
    for doc in (
        b'{"text": "' + run * size + b'"}',  # a value
        b'{"text": "x", "' + run * size + b'": 1}',  # an unknown key
    ):
        with pytest.raises(WireError):
            decode(doc, w.Message)  # no role and no parts: refused, after the key scan


def test_free_form_keys_with_underscores_are_not_renamed() -> None:
    free = {"task_id": 1, "nested": {"context_id": ["x"], "media_type": None}}
    doc = {
        "message": {
            "message_id": "m-1",  # snake_case: the schema-aware path is taken
            "role": "ROLE_USER",
            "parts": [{"data": free, "metadata": free}],
            "metadata": free,
        },
        "metadata": free,
    }
    request = decode(json.dumps(doc), w.SendMessageRequest)
    assert request.metadata == free
    assert request.message.metadata == free
    assert request.message.parts[0].data == free
    assert request.message.parts[0].metadata == free
    # The same free-form keys in an otherwise camelCase document.
    camel = {"message": _message(metadata=free), "metadata": free}
    assert decode(json.dumps(camel), w.SendMessageRequest).metadata == free


def test_map_keys_of_the_card_are_not_renamed() -> None:
    card = {
        "name": "a",
        "description": "d",
        "version": "1",
        "security_schemes": {
            "api_key": {"api_key_security_scheme": {"location": "header", "name": "X"}}
        },
        "security_requirements": [{"schemes": {"api_key": {"list": ["read_all"]}}}],
    }
    decoded = decode(json.dumps(card), w.AgentCard)
    scheme = decoded.security_schemes["api_key"].api_key_security_scheme
    assert isinstance(scheme, w.APIKeySecurityScheme)
    assert scheme.location == "header"
    assert decoded.security_requirements[0].schemes["api_key"].list == ["read_all"]
    assert b'"securitySchemes":{"api_key":{"apiKeySecurityScheme"' in encode(decoded)


def test_unknown_fields_are_ignored() -> None:
    doc = {"id": "t-1", "kind": "task", "status": {"state": "TASK_STATE_WORKING", "extra": 1}}
    assert decode(json.dumps(doc), w.Task) == w.Task(
        id="t-1", status=w.TaskStatus(state=w.TaskState.WORKING)
    )
    snake = {"id": "t-1", "context_id": "c", "future_field": {"a_b": 1}, "status": {"state": 2}}
    assert decode(json.dumps(snake), w.Task).context_id == "c"


# --- enums ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("ROLE_USER", w.Role.USER), ("ROLE_AGENT", w.Role.AGENT), (1, w.Role.USER), (2, w.Role.AGENT)],
)
def test_role_by_name_or_number(value: Any, expected: w.Role) -> None:
    message = decode(json.dumps(_message(role=value)), w.Message)
    assert message.role is expected
    assert json.loads(encode(message))["role"] == expected.value


def test_task_state_by_number_is_every_state_in_proto_order() -> None:
    for number, state in enumerate(w.TaskState):
        status = decode(json.dumps({"state": number}), w.TaskStatus)
        assert status.state is state
    request = decode(b'{"status": 5}', w.ListTasksRequest)
    assert request.status is w.TaskState.CANCELED


@pytest.mark.parametrize(
    ("doc", "type_", "field"),
    [
        (_message(role="ROLE_ROBOT"), w.Message, "role"),
        (_message(role=9), w.Message, "role"),
        (_message(role="ROLE_UNSPECIFIED"), w.Message, "role"),
        ({"state": 42}, w.TaskStatus, "state"),
        ({"status": "TASK_STATE_DONE"}, w.ListTasksRequest, "status"),
    ],
)
def test_bad_enum_values_name_the_field(doc: Any, type_: type[Any], field: str) -> None:
    assert _error(doc, type_).field == field


# --- Part and the other oneofs -------------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "kind"),
    [
        ({"text": "hi"}, "text"),
        ({"raw": "AAE="}, "raw"),
        ({"url": "https://x/y"}, "url"),
        ({"data": {"a": 1}}, "data"),
        ({"data": None}, "data"),
        ({"text": ""}, "text"),
    ],
)
def test_part_holds_exactly_one_content(part: dict[str, Any], kind: str) -> None:
    decoded = decode(json.dumps({**part, "mediaType": "x/y", "filename": "f"}), w.Part)
    assert decoded.kind == kind
    assert decoded.media_type == "x/y"
    assert json.loads(encode(decoded)) == {**part, "mediaType": "x/y", "filename": "f"}


@pytest.mark.parametrize("content", [{}, {"text": "a", "url": "b"}, {"raw": "AA==", "data": 1}])
def test_part_without_or_with_two_contents_is_refused(content: dict[str, Any]) -> None:
    error = _error({"message": _message(parts=[content])}, w.SendMessageRequest)
    assert error.field == "message.parts[0].content"
    error = _error({"message": _message(parts=[{"text": "ok"}, content])}, w.SendMessageRequest)
    assert error.field == "message.parts[1].content"


def test_part_constructor_enforces_the_oneof() -> None:
    with pytest.raises(ValueError):
        w.Part()
    with pytest.raises(ValueError):
        w.Part(text="a", url="b")


@pytest.mark.parametrize(
    ("doc", "type_", "field"),
    [
        ({}, w.StreamResponse, "payload"),
        (
            {"task": {"id": "t", "status": {"state": 1}}, "message": _message()},
            w.SendMessageResponse,
            "payload",
        ),
        ({"flows": {}}, w.OAuth2SecurityScheme, "flows.flow"),
        ({"implicit": {}, "password": {}}, w.OAuthFlows, "flow"),
        ({}, w.SecurityScheme, "scheme"),
    ],
)
def test_message_oneofs_need_exactly_one_member(doc: Any, type_: type[Any], field: str) -> None:
    assert _error(doc, type_).field == field


def test_stream_response_says_which_member_it_holds() -> None:
    update = {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
    response = decode(json.dumps({"statusUpdate": update}), w.StreamResponse)
    assert response.which == "status_update"


# --- required fields -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "type_", "field"),
    [
        ({}, w.Task, "id"),
        ({"id": "t"}, w.Task, "status"),
        ({"id": "t", "status": {}}, w.Task, "status.state"),
        (
            {"message": {"role": "ROLE_USER", "parts": [{"text": "a"}]}},
            w.SendMessageRequest,
            "message.messageId",
        ),
        ({"message": _message(parts=[])}, w.SendMessageRequest, "message.parts"),
        (
            {"message": {"messageId": "m", "role": "ROLE_USER"}},
            w.SendMessageRequest,
            "message.parts",
        ),
        ({"message": _message(messageId="")}, w.SendMessageRequest, "message.messageId"),
        ({"artifactId": "a", "parts": []}, w.Artifact, "parts"),
        ({"taskId": "t", "contextId": "c"}, w.TaskArtifactUpdateEvent, "artifact"),
        ({"taskId": "t", "status": {"state": 1}}, w.TaskStatusUpdateEvent, "contextId"),
        ({"taskId": "t"}, w.TaskPushNotificationConfig, "url"),
        ({"url": "u", "authentication": {}}, w.TaskPushNotificationConfig, "authentication.scheme"),
        ({"taskId": "t"}, w.GetTaskPushNotificationConfigRequest, "id"),
        ({"id": "c"}, w.DeleteTaskPushNotificationConfigRequest, "taskId"),
        ({}, w.ListTaskPushNotificationConfigsRequest, "taskId"),
        ({}, w.GetTaskRequest, "id"),
        ({}, w.CancelTaskRequest, "id"),
        ({}, w.SubscribeToTaskRequest, "id"),
        (
            {"name": "a", "description": "d", "version": "1", "skills": [{"id": "s", "name": "n"}]},
            w.AgentCard,
            "skills[0].description",
        ),
        (
            {
                "name": "a",
                "description": "d",
                "version": "1",
                "supportedInterfaces": [{"url": "u"}],
            },
            w.AgentCard,
            "supportedInterfaces[0].protocolBinding",
        ),
        (
            {"authorizationCode": {"tokenUrl": "t"}},
            w.OAuthFlows,
            "authorizationCode.authorizationUrl",
        ),
    ],
)
def test_missing_required_field_is_named(doc: Any, type_: type[Any], field: str) -> None:
    assert _error(doc, type_).field == field


def test_wrong_types_and_bad_json_are_reported() -> None:
    error = _error(_message(messageId=5), w.Message)
    assert (error.field, error.parse_error) == ("messageId", False)
    assert _error({"id": "t", "historyLength": True}, w.GetTaskRequest).field == "historyLength"
    assert _error(b"[]", w.Message).field == ""
    broken = _error(b'{"id": "t",', w.Task)
    assert broken.parse_error
    assert broken.field == ""


# --- presence ------------------------------------------------------------------------------


def test_optional_fields_keep_an_explicit_zero() -> None:
    request = decode(b'{"id": "t", "historyLength": 0}', w.GetTaskRequest)
    assert request.history_length == 0
    assert json.loads(encode(request)) == {"id": "t", "historyLength": 0}
    absent = decode(b'{"id": "t"}', w.GetTaskRequest)
    assert absent.history_length is w.UNSET
    assert json.loads(encode(absent)) == {"id": "t"}

    listing = decode(b'{"includeArtifacts": false, "pageSize": 0}', w.ListTasksRequest)
    assert listing.include_artifacts is False
    assert listing.page_size == 0
    assert json.loads(encode(listing)) == {"includeArtifacts": False, "pageSize": 0}

    caps = decode(b'{"streaming": false}', w.AgentCapabilities)
    assert caps.streaming is False
    assert caps.push_notifications is w.UNSET
    assert json.loads(encode(caps)) == {"streaming": False}

    empty_metadata = decode(json.dumps(_message(metadata={})), w.Message)
    assert empty_metadata.metadata == {}
    assert json.loads(encode(empty_metadata))["metadata"] == {}


def test_fields_without_presence_omit_their_zero_value() -> None:
    config = decode(b'{"returnImmediately": false, "historyLength": 0}', w.SendMessageConfiguration)
    assert config.return_immediately is False
    assert config.history_length == 0
    # returnImmediately has no presence in the proto: false is its zero value, omitted.
    assert json.loads(encode(config)) == {"historyLength": 0}
    assert json.loads(encode(w.SendMessageConfiguration(return_immediately=True))) == {
        "returnImmediately": True
    }
    message = w.Message(message_id="m", role=w.Role.AGENT, parts=[w.Part(text="x")])
    assert json.loads(encode(message)) == {
        "messageId": "m",
        "role": "ROLE_AGENT",
        "parts": [{"text": "x"}],
    }


def test_list_tasks_response_always_carries_its_required_fields() -> None:
    assert json.loads(encode(w.ListTasksResponse())) == {
        "tasks": [],
        "nextPageToken": "",
        "pageSize": 0,
        "totalSize": 0,
    }
    assert decode(b"{}", w.ListTasksResponse) == w.ListTasksResponse()


def test_null_means_not_set() -> None:
    doc = {
        "message": _message(
            contextId=None,
            metadata=None,
            extensions=None,
            parts=[{"text": "a", "metadata": None, "mediaType": None}, {"data": None}],
        ),
        "configuration": None,
        "metadata": None,
        "tenant": None,
    }
    request = decode(json.dumps(doc), w.SendMessageRequest)
    assert request == w.SendMessageRequest(
        message=w.Message(
            message_id="m-1",
            role=w.Role.USER,
            parts=[w.Part(text="a"), w.Part(data=None)],  # Part.data is a Value: null is one
        )
    )
    config = decode(
        b'{"historyLength": null, "taskPushNotificationConfig": null}', w.SendMessageConfiguration
    )
    assert config.history_length is w.UNSET
    assert config.task_push_notification_config is w.UNSET


def test_null_for_a_required_field_or_a_list_item_is_refused() -> None:
    assert _error({"message": None}, w.SendMessageRequest).field == "message"
    assert _error({"message": _message(parts=[None])}, w.SendMessageRequest).field == (
        "message.parts[0]"
    )


def test_integers_may_be_given_as_strings() -> None:
    assert decode(b'{"id": "t", "historyLength": "3"}', w.GetTaskRequest).history_length == 3
    listing = decode(b'{"page_size": "-1", "historyLength": "0"}', w.ListTasksRequest)
    assert (listing.page_size, listing.history_length) == (-1, 0)
    assert _error({"id": "t", "historyLength": "3.5"}, w.GetTaskRequest).field == "historyLength"
    assert _error({"id": "t", "historyLength": "three"}, w.GetTaskRequest).field == (
        "historyLength"
    )


# --- bytes and timestamps ------------------------------------------------------------------


@pytest.mark.parametrize("text", ["AP8=", "AP8", "AP-_", "AP+/"])
def test_raw_accepts_standard_and_url_safe_base64_with_or_without_padding(text: str) -> None:
    raw = decode(json.dumps({"raw": text}), w.Part).raw
    assert raw == (b"\x00\xff" if text.startswith("AP8") else b"\x00\xff\xbf")


def test_raw_is_written_as_padded_standard_base64() -> None:
    assert encode(w.Part(raw=b"\xfb\xff")) == b'{"raw":"+/8="}'


def test_bad_base64_names_the_field() -> None:
    doc = {"id": "t", "status": {"state": 1}, "history": [_message(parts=[{"raw": "!!"}])]}
    assert _error(doc, w.Task).field == "history[0].parts[0].raw"


def test_timestamps_are_utc_with_milliseconds() -> None:
    assert format_timestamp(0) == "1970-01-01T00:00:00.000Z"
    assert format_timestamp(1_700_000_000_123) == "2023-11-14T22:13:20.123Z"
    assert parse_timestamp("2023-11-14T22:13:20.123Z") == 1_700_000_000_123
    assert parse_timestamp("2023-11-14T23:13:20.123456+01:00") == 1_700_000_000_123
    assert parse_timestamp("2023-11-14t22:13:20z") == 1_700_000_000_000
    # The last second and the last millisecond are remembered: each must still be right.
    for ms in (123, 123, 124, 999, 1_000, 123, 86_400_000, 86_400_000, 123):
        assert parse_timestamp(format_timestamp(1_700_000_000_000 + ms)) == 1_700_000_000_000 + ms
    for bad in ["", "2023-11-14", "2023-11-14T22:13:20", "yesterday"]:
        with pytest.raises(ValueError):
            parse_timestamp(bad)


def test_the_first_timestamp_formatted_may_be_before_1970() -> None:
    fresh = importlib.reload(accord.wire._time)  # nothing remembered yet
    assert fresh.format_timestamp(-500) == "1969-12-31T23:59:59.500Z"


def test_status_timestamps_are_validated_and_normalized() -> None:
    status = decode(b'{"state": 2, "timestamp": "2023-11-14T23:13:20+01:00"}', w.TaskStatus)
    assert status.timestamp == "2023-11-14T22:13:20.000Z"
    for bad in ("not a time", ""):
        doc = {"id": "t", "status": {"state": 2, "timestamp": bad}}
        assert _error(doc, w.Task).field == "status.timestamp"


# --- helpers -------------------------------------------------------------------------------


def test_message_text_joins_text_parts() -> None:
    message = w.Message(
        message_id="m",
        role=w.Role.USER,
        parts=[w.Part(text="a"), w.Part(data={"x": 1}), w.Part(text="b")],
    )
    assert message.text() == "ab"


def test_task_state_groups() -> None:
    terminal = {s for s in w.TaskState if s.terminal}
    interrupted = {s for s in w.TaskState if s.interrupted}
    assert terminal == {
        w.TaskState.COMPLETED,
        w.TaskState.FAILED,
        w.TaskState.CANCELED,
        w.TaskState.REJECTED,
    }
    assert interrupted == {w.TaskState.INPUT_REQUIRED, w.TaskState.AUTH_REQUIRED}
