"""Argument checks every backend applies to ``append`` (programming errors, not conflicts)."""

from __future__ import annotations

from collections.abc import Sequence

from accord.core import Event, TaskRecord
from accord.store._base import StoreError


def check_append(record: TaskRecord, events: Sequence[Event], expected_seq: int) -> None:
    if not events:
        raise StoreError(f"task {record.id!r}: append needs at least one event")
    for offset, event in enumerate(events, start=expected_seq + 1):
        if event.seq != offset or event.task_id != record.id:
            raise StoreError(
                f"task {record.id!r}: event {event.task_id!r}#{event.seq} does not follow"
                f" seq {offset - 1}"
            )
    if record.seq != events[-1].seq:
        raise StoreError(
            f"task {record.id!r}: snapshot seq {record.seq} is not the last event's"
            f" ({events[-1].seq})"
        )
