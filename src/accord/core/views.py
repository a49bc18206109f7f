"""Read models: the Tasks view / ListTasks query, its paging, and how a task is shown.

``TaskQuery`` is what a store answers; ``matches`` states the seed's row predicate once, so the
in-memory store and the tests share it with the SQL a durable store writes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass

import msgspec

from accord.core._records import TaskRecord
from accord.wire import UNSET, ListTasksRequest, Task, TaskState, invalid_params, parse_timestamp

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100


# A status time or anything else read back from a token must fit the stores' 64-bit columns.
_MAX_INT64 = 2**63 - 1
_MAC_BYTES = 16  # of HMAC-SHA256: forging a token takes 2**128 guesses


@dataclass(frozen=True, slots=True)
class Cursor:
    """Keyset position: the (status time, task id) of the last task of the previous page.

    As a page token it is signed (HMAC-SHA256 with the store's shared secret), so a client
    can hand back only a position the server gave it: base64url of ``updated_ms:task_id``,
    a dot, base64url of the MAC."""

    updated_ms: int
    task_id: str

    def token(self, key: bytes) -> str:
        raw = f"{self.updated_ms}:{self.task_id}".encode()
        return f"{_b64(raw)}.{_b64(_mac(key, raw))}"

    @classmethod
    def parse(cls, token: str, key: bytes) -> Cursor:
        """The cursor a token carries; InvalidParams naming ``pageToken`` unless this key
        signed it."""
        try:
            body, _, mac = token.partition(".")
            raw = _unb64(body)
            if not hmac.compare_digest(_unb64(mac), _mac(key, raw)):
                raise ValueError("wrong signature")
            millis, task_id = raw.decode().split(":", 1)
            updated_ms = int(millis)
            if not 0 <= updated_ms <= _MAX_INT64:
                raise ValueError("status time out of range")
            return cls(updated_ms, task_id)
        except (binascii.Error, UnicodeError, ValueError):
            raise invalid_params("pageToken", "not a page token this server issued") from None


def _mac(key: bytes, raw: bytes) -> bytes:
    return hmac.new(key, raw, hashlib.sha256).digest()[:_MAC_BYTES]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    if not text.isascii():
        raise ValueError("not base64")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class TaskQuery:
    tenant: str
    context_id: str = ""
    status: TaskState | None = None
    updated_after_ms: int | None = None  # inclusive
    page_size: int = DEFAULT_PAGE_SIZE
    after: Cursor | None = None
    history_length: int | None = None
    include_artifacts: bool = False


def matches(record: TaskRecord, query: TaskQuery) -> bool:
    """The Tasks view's row predicate (without the page cursor)."""
    return (
        record.tenant == query.tenant
        and (not query.context_id or record.task.context_id == query.context_id)
        and (query.status is None or record.state is query.status)
        and (query.updated_after_ms is None or record.updated_ms >= query.updated_after_ms)
    )


def sort_key(record: TaskRecord) -> tuple[int, str]:
    """Newest status first; ties broken by id, descending, so paging is total."""
    return (record.updated_ms, record.task.id)


def after_cursor(record: TaskRecord, cursor: Cursor | None) -> bool:
    if cursor is None:
        return True
    return sort_key(record) < (cursor.updated_ms, cursor.task_id)


def list_query(request: ListTasksRequest, tenant: str, token_key: bytes) -> TaskQuery:
    """Validate a ListTasksRequest into a query; raises A2AError (invalid params).
    ``token_key`` signed the page tokens this server issued (see :class:`Cursor`)."""
    page_size = DEFAULT_PAGE_SIZE
    if request.page_size is not UNSET:
        if not 1 <= request.page_size <= MAX_PAGE_SIZE:
            raise invalid_params("pageSize", f"must be between 1 and {MAX_PAGE_SIZE}")
        page_size = request.page_size
    history_length = _history_length(request.history_length)
    updated_after: int | None = None
    if request.status_timestamp_after is not UNSET:
        try:
            updated_after = parse_timestamp(request.status_timestamp_after)
        except ValueError as exc:
            raise invalid_params("statusTimestampAfter", str(exc)) from None
    status = request.status
    assert isinstance(status, TaskState)
    return TaskQuery(
        tenant=tenant,
        context_id=request.context_id,
        status=None if status is TaskState.UNSPECIFIED else status,
        updated_after_ms=updated_after,
        page_size=page_size,
        after=Cursor.parse(request.page_token, token_key) if request.page_token else None,
        history_length=history_length,
        include_artifacts=request.include_artifacts is True,
    )


def _history_length(value: int | msgspec.UnsetType) -> int | None:
    if value is UNSET:
        return None
    if value < 0:
        raise invalid_params("historyLength", "must not be negative")
    return value


def history_length(value: int | msgspec.UnsetType) -> int | None:
    """Validated ``historyLength`` (None: the whole history); raises A2AError."""
    return _history_length(value)


def present(task: Task, history_length: int | None, include_artifacts: bool = True) -> Task:
    """The task as a response shows it: at most ``history_length`` latest messages, and
    artifacts only when asked for."""
    history = task.history
    if history_length is not None and len(history) > history_length:
        history = history[len(history) - history_length :] if history_length else []
    artifacts = task.artifacts if include_artifacts else []
    if history is task.history and artifacts is task.artifacts:
        return task
    return msgspec.structs.replace(task, history=history, artifacts=artifacts)
