"""What the SQL stores share: how a state is stored, and rows back into records and events.

What a store wrote itself is canonical camelCase JSON, so it is decoded with plain typed
decoders; accord.wire._codec.decode would first scan every snapshot for snake_case keys, which
only untrusted input needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from accord.core import Event, JournalEntry, PushConfigRecord, TaskRecord
from accord.core.lifecycle import TERMINAL
from accord.wire import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)

# A row as a driver returns it: a tuple (sqlite3) or an asyncpg Record; both index by position.
Row = Sequence[Any] | Any

# Task states as stored: the proto enum number.
STATE_NUMBER: dict[TaskState, int] = {state: number for number, state in enumerate(TaskState)}
STATE_BY_NUMBER: dict[int, TaskState] = dict(enumerate(TaskState))
TERMINAL_NUMBERS: tuple[int, ...] = tuple(sorted(STATE_NUMBER[s] for s in TERMINAL))

task_decoder = msgspec.json.Decoder(Task)
config_decoder = msgspec.json.Decoder(TaskPushNotificationConfig)
BODY_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    "task": task_decoder,
    "status": msgspec.json.Decoder(TaskStatusUpdateEvent),
    "artifact": msgspec.json.Decoder(TaskArtifactUpdateEvent),
    "message": msgspec.json.Decoder(Message),
    "journal": msgspec.json.Decoder(JournalEntry),
}


def task_record(row: Row) -> TaskRecord:
    """From the columns (tenant, seq, created_ms, updated_ms, snapshot, …)."""
    tenant, seq, created_ms, updated_ms, snapshot = row[:5]
    return TaskRecord(
        task=task_decoder.decode(snapshot),
        tenant=tenant,
        seq=seq,
        created_ms=created_ms,
        updated_ms=updated_ms,
    )


def config_record(row: Row) -> PushConfigRecord:
    """From the columns (tenant, created_ms, body, …)."""
    tenant, created_ms, body = row[:3]
    return PushConfigRecord(
        config=config_decoder.decode(body), tenant=tenant, created_ms=created_ms
    )


def events(task_id: str, rows: Iterable[Row]) -> list[Event]:
    """From rows of (seq, kind, at_ms, body)."""
    return [
        Event(
            task_id=task_id,
            seq=seq,
            kind=kind,
            body=BODY_DECODERS[kind].decode(body),
            at_ms=at_ms,
        )
        for seq, kind, at_ms, body in rows
    ]
