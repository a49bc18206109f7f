"""Reading accord's SSE streams in the interop tests: events with their ids, and the
StreamResponse each carries whichever binding wrote it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class Event:
    id: int
    data: dict[str, Any]


def events(response: httpx.Response) -> Iterator[Event]:
    """SSE events of a response, as they arrive; comments (keep-alives) skipped."""
    event_id: int | None = None
    data: list[str] = []
    for line in response.iter_lines():
        if line.startswith("id:"):
            event_id = int(line[3:].strip())
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and data:
            assert event_id is not None, "every task event carries an id"
            yield Event(event_id, json.loads("\n".join(data)))
            event_id, data = None, []


def payload(event: Event) -> dict[str, Any]:
    """The StreamResponse of an event, whichever binding wrote it."""
    result = event.data.get("result", event.data)
    assert isinstance(result, dict)
    return result
