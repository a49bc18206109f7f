"""Views (ListTasks validation, the Tasks predicate, paging, presentation) and the checks every
request passes first (version, extensions)."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from core_helpers import T0, accepted, new_task
from hypothesis import given, settings
from hypothesis import strategies as st

from accord.core import TaskRecord, agent, negotiation, views
from accord.wire._errors import A2AError, ErrorKind
from accord.wire._model import (
    UNSET,
    AgentExtension,
    Artifact,
    ListTasksRequest,
    Message,
    Part,
    Role,
    TaskState,
)

# --- version and extensions ----------------------------------------------------------------

KEY = b"k" * 32  # what the store's shared secret would be


@pytest.mark.parametrize("version", ["1.0", "1.0.3", " 1.0 ", "1.0.0"])
def test_served_versions(version: str) -> None:
    assert negotiation.check_version(version) is None


@pytest.mark.parametrize("version", [None, "", "0.3", "0.3.0", "2.0", "1.1", "1"])
def test_refused_versions(version: str | None) -> None:
    error = negotiation.check_version(version)
    assert error is not None
    assert error.kind is ErrorKind.VERSION_NOT_SUPPORTED
    assert error.metadata["supportedVersions"] == "1.0"


def test_missing_version_means_0_3() -> None:
    error = negotiation.check_version(None)
    assert error is not None
    assert "0.3" in error.message


def test_extension_header_values_are_split_and_deduplicated() -> None:
    values = ["urn:a, urn:b", "urn:b,urn:c", " ", ""]
    assert negotiation.parse_extensions(values) == ["urn:a", "urn:b", "urn:c"]


def test_required_extension_must_be_requested() -> None:
    declared = [
        AgentExtension(uri="urn:required", required=True),
        AgentExtension(uri="urn:optional"),
    ]
    missing = negotiation.check_extensions(["urn:optional"], declared)
    assert missing.activated == []
    assert missing.error is not None
    assert missing.error.kind is ErrorKind.EXTENSION_SUPPORT_REQUIRED
    assert missing.error.metadata == {"extensions": "urn:required"}

    ok = negotiation.check_extensions(["urn:unknown", "urn:required", "urn:optional"], declared)
    assert ok.error is None
    assert ok.activated == ["urn:required", "urn:optional"]  # unknown ones are ignored
    assert negotiation.check_extensions([], [AgentExtension(uri="urn:optional")]).error is None


# --- ListTasks validation ------------------------------------------------------------------


def _invalid(request: ListTasksRequest) -> A2AError:
    with pytest.raises(A2AError) as caught:
        views.list_query(request, "acme", KEY)
    assert caught.value.kind is ErrorKind.INVALID_PARAMS
    return caught.value


def test_list_query_defaults() -> None:
    query = views.list_query(ListTasksRequest(), "acme", KEY)
    assert query == views.TaskQuery(tenant="acme")
    assert (query.page_size, query.status, query.history_length) == (50, None, None)
    assert query.include_artifacts is False


def test_list_query_reads_every_filter() -> None:
    cursor = views.Cursor(T0, "t-9")
    request = ListTasksRequest(
        context_id="c-1",
        status=TaskState.WORKING,
        page_size=100,
        page_token=cursor.token(KEY),
        history_length=0,
        status_timestamp_after="2023-11-14T23:13:20.000+01:00",
        include_artifacts=True,
    )
    query = views.list_query(request, "acme", KEY)
    assert query == views.TaskQuery(
        tenant="acme",
        context_id="c-1",
        status=TaskState.WORKING,
        updated_after_ms=1_700_000_000_000,
        page_size=100,
        after=cursor,
        history_length=0,
        include_artifacts=True,
    )
    assert views.list_query(ListTasksRequest(page_size=1), "acme", KEY).page_size == 1


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (ListTasksRequest(page_size=0), "pageSize"),
        (ListTasksRequest(page_size=101), "pageSize"),
        (ListTasksRequest(page_size=-1), "pageSize"),
        (ListTasksRequest(history_length=-1), "historyLength"),
        (ListTasksRequest(status_timestamp_after="yesterday"), "statusTimestampAfter"),
        (ListTasksRequest(status_timestamp_after="2023-11-14T10:00:00"), "statusTimestampAfter"),
        (ListTasksRequest(page_token="!!not-a-token"), "pageToken"),
        (ListTasksRequest(page_token="bm8tY29sb24"), "pageToken"),  # "no-colon"
        (ListTasksRequest(page_token="eDp0LTE"), "pageToken"),  # "x:t-1"
    ],
)
def test_list_query_refuses_invalid_params(request_: ListTasksRequest, field: str) -> None:
    error = _invalid(request_)
    assert [v.field for v in error.violations] == [field]


def test_history_length_validation() -> None:
    assert views.history_length(UNSET) is None
    assert views.history_length(0) == 0
    with pytest.raises(A2AError):
        views.history_length(-3)


@given(millis=st.integers(min_value=0, max_value=2**53), task_id=st.text(max_size=40))
@settings(max_examples=100)
def test_cursor_token_round_trip(millis: int, task_id: str) -> None:
    cursor = views.Cursor(millis, task_id)
    token = cursor.token(KEY)
    assert "=" not in token and "+" not in token and "/" not in token
    assert views.Cursor.parse(token, KEY) == cursor


def _unsigned(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _signed(raw: bytes, key: bytes = KEY) -> str:
    mac = hmac.new(key, raw, hashlib.sha256).digest()[:16]
    return f"{_unsigned(raw)}.{_unsigned(mac)}"


@pytest.mark.parametrize(
    "token",
    [
        _unsigned(b"1700000000000:t-1"),  # well formed, as tokens used to be, but unsigned
        _signed(b"1700000000000:t-1", b"another server's key"),
        _signed(b"1700000000000:t-1")[:-2],  # a MAC cut short
        _signed(b"1700000000000:t-1") + "x",  # a MAC made longer
        _signed(b"1700000000000:t-1").replace("MTcw", "MTgw", 1),  # the position changed
    ],
)
def test_a_page_token_this_key_did_not_sign_is_refused(token: str) -> None:
    error = _invalid(ListTasksRequest(page_token=token))
    assert [v.field for v in error.violations] == ["pageToken"]


@pytest.mark.parametrize(
    "raw",
    [
        b"99999999999999999999999:t-1",  # past int64: SQLite raised OverflowError
        b"9223372036854775808:t-1",  # 2**63
        b"-1:t-1",
        b"%s:t-1" % (b"9" * 5000),  # int() refuses more than 4,300 digits
        "²:t-1".encode(),  # a digit to str.isdigit, not to int()
    ],
)
def test_a_signed_page_token_out_of_range_is_refused(raw: bytes) -> None:
    # Even a token carrying the right MAC (a leaked key, a future format) must not reach
    # a store with a position no 64-bit column holds.
    error = _invalid(ListTasksRequest(page_token=_signed(raw)))
    assert [v.field for v in error.violations] == ["pageToken"]


def test_the_largest_int64_position_is_still_a_position() -> None:
    cursor = views.Cursor(2**63 - 1, "t-1")
    assert views.Cursor.parse(cursor.token(KEY), KEY) == cursor


# --- the Tasks view ------------------------------------------------------------------------


def _record(task_id: str, *, tenant: str = "acme", updated_ms: int = T0) -> TaskRecord:
    record, _ = new_task(tenant=tenant, task_id=task_id, context_id=f"ctx-{task_id[-1]}")
    record.updated_ms = updated_ms
    return record


def test_matches_is_the_seeds_row_predicate() -> None:
    record = _record("t-1", updated_ms=T0)
    base = views.TaskQuery(tenant="acme")
    assert views.matches(record, base)
    assert not views.matches(record, views.TaskQuery(tenant="globex"))
    assert not views.matches(record, views.TaskQuery(tenant=""))
    assert views.matches(record, views.TaskQuery(tenant="acme", context_id="ctx-1"))
    assert not views.matches(record, views.TaskQuery(tenant="acme", context_id="ctx-2"))
    assert views.matches(record, views.TaskQuery(tenant="acme", status=TaskState.SUBMITTED))
    assert not views.matches(record, views.TaskQuery(tenant="acme", status=TaskState.WORKING))
    # statusTimestampAfter is inclusive.
    assert views.matches(record, views.TaskQuery(tenant="acme", updated_after_ms=T0))
    assert not views.matches(record, views.TaskQuery(tenant="acme", updated_after_ms=T0 + 1))


@given(
    times=st.lists(st.integers(min_value=0, max_value=5), min_size=0, max_size=12),
    page_size=st.integers(min_value=1, max_value=4),
)
@settings(max_examples=100)
def test_keyset_paging_visits_every_task_once_newest_first(
    times: list[int], page_size: int
) -> None:
    records = [_record(f"t-{i:02d}", updated_ms=t) for i, t in enumerate(times)]
    ordered = sorted(records, key=views.sort_key, reverse=True)
    seen: list[TaskRecord] = []
    cursor: views.Cursor | None = None
    while True:
        page = [r for r in ordered if views.after_cursor(r, cursor)][:page_size]
        seen.extend(page)
        if len(page) < page_size:
            break
        last = page[-1]
        cursor = views.Cursor.parse(views.Cursor(last.updated_ms, last.task.id).token(KEY), KEY)
    assert [r.task.id for r in seen] == [r.task.id for r in ordered]
    assert [r.updated_ms for r in seen] == sorted(times, reverse=True)


# --- present -------------------------------------------------------------------------------


def _task_with_history(size: int) -> TaskRecord:
    record, _ = new_task()
    for i in range(1, size):
        note = Message(message_id=f"n-{i}", role=Role.AGENT, parts=[Part(text=str(i))])
        record = accepted(agent.move(record, "work", T0 + i, note), "moved")
    artifact = Artifact(artifact_id="a", parts=[Part(text="x")])
    return accepted(agent.update_artifact(record, artifact, T0), "updated")


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        (None, ["m-1", "n-1", "n-2"]),
        (0, []),
        (1, ["n-2"]),
        (2, ["n-1", "n-2"]),
        (9, ["m-1", "n-1", "n-2"]),
    ],
)
def test_present_keeps_the_latest_messages(length: int | None, expected: list[str]) -> None:
    task = _task_with_history(3).task
    shown = views.present(task, length)
    assert [m.message_id for m in shown.history] == expected
    assert shown.artifacts == task.artifacts
    assert len(task.history) == 3  # the snapshot itself is untouched


def test_present_leaves_out_artifacts_unless_asked() -> None:
    task = _task_with_history(1).task
    assert views.present(task, None, include_artifacts=False).artifacts == []
    assert views.present(task, None) is task
    assert task.artifacts != []
