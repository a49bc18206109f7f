"""Appends as SQL: the rows of the writer's ``append_rows`` view, and the statements that
write them.

Every statement costs the writer thread more than its SQL: CPython's sqlite3 hands the GIL
over around each step, and getting it back while the event loop runs Python can take as long
as the loop keeps it. So appends are written as rows of one temporary view whose INSTEAD OF
triggers insert or update ``tasks`` and insert ``events``: a batch of appends is one INSERT
(padded to one of a few sizes), and in autocommit mode that one statement is the whole
transaction, COMMIT and fsync included.

The triggers refuse a row with RAISE(ABORT), which undoes the whole statement, when the task's
stored seq is not the one its append expects, or when a creation would take its tenant past
``tenant_limit`` (counting the tasks stored and the creations before it in the statement); a
creation of a task that exists breaks the primary key, and so does a request key (safe
retries) that ``requests`` holds already. :meth:`Append.run` writes one append on its own and
says which refusal it is.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from accord.core import RequestKey
from accord.store._base import DuplicateRequest, LimitExceeded, SeqConflict
from accord.store._row_cache import Row

# Rows of append_rows per INSERT. Up to _EXACT_ROWS a statement has exactly the batch's rows;
# above, it is padded with rows no trigger takes up to the next power of two, at most
# ROWS_PER_STATEMENT (31 variables a row: below SQLite's limit of 32,766). That bounds
# the distinct statement texts, which all stay compiled in the connection's statement cache:
# compiling a multi-row statement costs about as much as running it.
_EXACT_ROWS = 32
ROWS_PER_STATEMENT = 1024
STATEMENT_CACHE = 128  # compiled statements kept per connection (append_rows: 37 texts)

# The view appends are written through (temporary: it lives on the writer's connection only,
# and the database file's schema does not change). A row is one append's task and its first
# EVENTS_PER_ROW events; further events follow in rows of ``kind`` 3 (events only). Fewer,
# wider rows: SQLite copies the rows of a multi-row INSERT into a view into a temporary table
# before the triggers run, and that copy is most of what a row costs.
EVENTS_PER_ROW = 4
_EVENT_COLUMNS = ", ".join(f"seq{i}, kind{i}, at_ms{i}, body{i}" for i in range(EVENTS_PER_ROW))
_TASK_COLUMNS = (
    "kind, task_id, tenant, context_id, state, created_ms, updated_ms, seq, snapshot, expected,"
    " tenant_limit"
)
# A request key the append carries out (safe retries); req_key '' when none. An append with
# more keys than one writes the others in rows of kind 4 (keys only).
_REQUEST_COLUMNS = "req_caller, req_key, req_fingerprint, req_created_ms"
_ROW_WIDTH = 11 + 4 + 4 * EVENTS_PER_ROW
_CREATE, _MOVE, _EDIT, _EVENTS_ONLY, _KEY_ONLY = 0, 1, 2, 3, 4
_NO_REQUEST = ("", "", 0, 0)
# Unused columns hold 0, not NULL, and blobs go in as bytearray: CPython's sqlite3 binds int,
# float, str and bytearray straight away, but runs every other value (None and bytes among
# them) through its adapter lookup first, which costs more than the binding itself.
_NO_LIMIT = -1  # tenant_limit of an append with none
_NO_EVENT = (0, 0, 0, 0)  # seq, kind, at_ms, body of an event column left empty (seq 0)
# A row of append_rows that no trigger takes (req_key 0: an integer sorts below any text, so
# the request trigger's "req_key > ''" is false).
_PADDING = (-1,) + (0,) * (_ROW_WIDTH - 1)


def _event_inserts() -> str:
    first = "INSERT INTO events VALUES (new.task_id, new.seq0, new.kind0, new.at_ms0, new.body0);"
    rest = [
        f"INSERT INTO events SELECT new.task_id, new.seq{i}, new.kind{i}, new.at_ms{i},"
        f" new.body{i} WHERE new.seq{i} > 0;"
        for i in range(1, EVENTS_PER_ROW)
    ]
    return "\n".join([first, *rest])


APPEND_ROWS = (
    f"""CREATE TEMP VIEW append_rows ({_TASK_COLUMNS}, {_REQUEST_COLUMNS}, {_EVENT_COLUMNS})
    AS SELECT {", ".join(["NULL"] * _ROW_WIDTH)} WHERE 0""",
    """CREATE TEMP TRIGGER append_create INSTEAD OF INSERT ON append_rows WHEN new.kind = 0
    BEGIN
        SELECT RAISE(ABORT, 'accord: tenant full') WHERE new.tenant_limit >= 0
            AND (SELECT COALESCE(SUM(n), 0) FROM task_counts WHERE tenant = new.tenant)
                >= new.tenant_limit;
        INSERT INTO tasks VALUES (new.task_id, new.tenant, new.context_id, new.state,
            new.created_ms, new.updated_ms, new.seq, new.snapshot);
    END""",
    """CREATE TEMP TRIGGER append_move INSTEAD OF INSERT ON append_rows WHEN new.kind = 1
    BEGIN
        SELECT RAISE(ABORT, 'accord: seq conflict') WHERE NOT EXISTS
            (SELECT 1 FROM tasks WHERE id = new.task_id AND seq = new.expected);
        UPDATE tasks SET state = new.state, updated_ms = new.updated_ms, seq = new.seq,
            snapshot = new.snapshot WHERE id = new.task_id;
    END""",
    # No status change: state and updated_ms are not assigned, so SQLite leaves the indexes
    # alone (it rewrites an index entry whenever a column of it is assigned, even to the same
    # value). A stored state or time that differs after all is a conflict.
    """CREATE TEMP TRIGGER append_edit INSTEAD OF INSERT ON append_rows WHEN new.kind = 2
    BEGIN
        SELECT RAISE(ABORT, 'accord: seq conflict') WHERE NOT EXISTS
            (SELECT 1 FROM tasks WHERE id = new.task_id AND seq = new.expected
                AND state = new.state AND updated_ms = new.updated_ms);
        UPDATE tasks SET seq = new.seq, snapshot = new.snapshot WHERE id = new.task_id;
    END""",
    # A key held already breaks requests' primary key: the statement is undone, and the
    # append replayed on its own says DuplicateRequest (Append.run).
    """CREATE TEMP TRIGGER append_request INSTEAD OF INSERT ON append_rows
    WHEN new.req_key > ''
    BEGIN
        INSERT INTO requests (tenant, caller, key, created_ms, fingerprint, task_id)
            VALUES (new.tenant, new.req_caller, new.req_key, new.req_created_ms,
                new.req_fingerprint, new.task_id);
    END""",
    f"""CREATE TEMP TRIGGER append_events INSTEAD OF INSERT ON append_rows
    WHEN new.seq0 > 0
    BEGIN
        {_event_inserts()}
    END""",
)

EventRow = tuple[str, int, str, int, bytes]  # task_id, seq, kind, at_ms, body


@dataclass(slots=True)
class Append:
    """One ``TaskStore.append``, encoded and ready for SQL."""

    task_id: str
    tenant: str
    context_id: str
    state: int
    created_ms: int
    updated_ms: int
    seq: int
    snapshot: bytes
    expected: int
    events: list[EventRow]
    # False when no event changes the status: then state and updated_ms stay as stored, and
    # the edit trigger leaves the indexes alone (SQLite rewrites an index entry whenever a
    # column of it is assigned, even to the same value).
    status_changed: bool = True
    tenant_limit: int | None = None  # a creation's tasks-per-tenant limit
    requests: Sequence[RequestKey] = ()  # keys of the requests this append carries out

    def run(self, conn: sqlite3.Connection) -> None:
        """This append on its own. Raises SeqConflict, LimitExceeded or DuplicateRequest
        before writing anything."""
        for key in self.requests:
            recorded = conn.execute(
                "SELECT task_id FROM requests WHERE tenant = ? AND caller = ? AND key = ?",
                (key.tenant, key.caller, key.key),
            ).fetchall()
            if recorded:
                raise DuplicateRequest(key, recorded[0][0])
        if self.expected == 0 and self.tenant_limit is not None:
            held = tenant_counts(conn, [self.tenant]).get(self.tenant, 0)
            if held >= self.tenant_limit and not _exists(conn, self.task_id):
                raise LimitExceeded("tasks_per_tenant", self.tenant_limit, self.task_id)
        if self.expected == 0:
            cursor = conn.execute(
                "INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                self.task_row(),
            )
        else:
            cursor = conn.execute(
                "UPDATE tasks SET state = ?, updated_ms = ?, seq = ?, snapshot = ?"
                " WHERE id = ? AND seq = ?",
                (self.state, self.updated_ms, self.seq, self.snapshot, self.task_id, self.expected),
            )
        if cursor.rowcount != 1:
            found = conn.execute("SELECT seq FROM tasks WHERE id = ?", (self.task_id,)).fetchall()
            raise SeqConflict(self.task_id, self.expected, found[0][0] if found else 0)
        conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", self.events)
        conn.executemany(
            "INSERT INTO requests (tenant, caller, key, created_ms, fingerprint, task_id)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [
                (k.tenant, k.caller, k.key, k.created_ms, k.fingerprint, self.task_id)
                for k in self.requests
            ],
        )

    def task_row(self) -> tuple[Any, ...]:
        """The task's row of ``tasks``, in column order."""
        return (
            self.task_id,
            self.tenant,
            self.context_id,
            self.state,
            self.created_ms,
            self.updated_ms,
            self.seq,
            self.snapshot,
        )

    def rows(self) -> list[tuple[Any, ...]]:
        """This append as rows of append_rows: the task's with its first events, then rows
        of the events that did not fit."""
        kind = _CREATE if self.expected == 0 else _MOVE if self.status_changed else _EDIT
        events = self.events
        requests = self.requests
        rows: list[tuple[Any, ...]] = [
            (
                kind,
                *self.task_row()[:-1],
                bytearray(self.snapshot),  # the last column of the task's row
                self.expected,
                _NO_LIMIT if self.tenant_limit is None else self.tenant_limit,
                *(_request_values(requests[0]) if requests else _NO_REQUEST),
                *_event_values(events[:EVENTS_PER_ROW]),
            )
        ]
        for start in range(EVENTS_PER_ROW, len(events), EVENTS_PER_ROW):
            more = _event_values(events[start : start + EVENTS_PER_ROW])
            rows.append((_EVENTS_ONLY, self.task_id, *_PADDING[2:11], *_NO_REQUEST, *more))
        for key in requests[1:]:
            rows.append(
                (
                    _KEY_ONLY,
                    self.task_id,
                    self.tenant,
                    *_PADDING[3:11],
                    *_request_values(key),
                    *_NO_EVENT * EVENTS_PER_ROW,
                )
            )
        return rows

    def cached_row(self) -> Row:
        """The task's row as the store's reads select it."""
        return (self.tenant, self.seq, self.created_ms, self.updated_ms, self.snapshot)


def _request_values(key: RequestKey) -> tuple[Any, ...]:
    return (key.caller, key.key, bytearray(key.fingerprint), key.created_ms)


def _event_values(events: Sequence[EventRow]) -> tuple[Any, ...]:
    """The event columns of a row of append_rows (seq 0 where there are fewer events)."""
    values: list[Any] = []
    for _, seq, kind, at_ms, body in events:
        values += (seq, kind, at_ms, bytearray(body))
    return (*values, *_NO_EVENT * (EVENTS_PER_ROW - len(events)))


def tenant_counts(conn: sqlite3.Connection, tenants: Sequence[str]) -> dict[str, int]:
    """How many tasks each of ``tenants`` holds, as this transaction sees it."""
    marks = ", ".join("?" * len(tenants))
    rows = conn.execute(
        f"SELECT tenant, SUM(n) FROM task_counts WHERE tenant IN ({marks}) GROUP BY tenant",
        list(tenants),
    ).fetchall()
    return {tenant: int(n) for tenant, n in rows}


def _exists(conn: sqlite3.Connection, task_id: str) -> bool:
    return bool(conn.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchall())


def statements(rows: list[tuple[Any, ...]]) -> list[tuple[str, list[Any]]]:
    """INSERTs into append_rows of ``rows`` in order, with their parameters."""
    statements = []
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        chunk = rows[start : start + ROWS_PER_STATEMENT]
        size = len(chunk)
        if size > _EXACT_ROWS:
            size = 1 << (size - 1).bit_length()  # the next power of two
        params = [value for row in chunk for value in row]
        params += _PADDING * (size - len(chunk))
        statements.append((_insert_text(size), params))
    return statements


@functools.cache
def _insert_text(size: int) -> str:
    row = "(" + ", ".join("?" * _ROW_WIDTH) + ")"
    return "INSERT INTO append_rows VALUES " + ", ".join([row] * size)
