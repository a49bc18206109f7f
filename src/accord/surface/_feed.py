"""The Agent-actor event feed, ``GET /tasks/events``: the published domain events of the
caller's tenant as Server-Sent Events, in the store's global order.

Each SSE event is ``id: <position>-<index>`` (the feed entry and the event within it),
``event: <qualified name>`` and ``data: {"event", "payload", "tenant"}``. A reader that
reconnects with ``Last-Event-ID`` gets exactly the events after that one.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from accord.core import Event, artifact_published, status_published
from accord.engine import Engine
from accord.server import event_number
from accord.service import FeedHub, batches
from accord.store import FeedEntry
from accord.wire import Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent, to_builtins

MESSAGE_ADDED = "accord.tasks.TaskMessageAdded"


def parse_last_event_id(value: str | None) -> tuple[int, int]:
    """(position, index) after which to resume; (0, -1) from the start."""
    if not value:
        return 0, -1
    position, dash, index = value.strip().partition("-")
    try:
        return event_number(position), event_number(index) if dash else 1 << 30
    except ValueError as exc:
        raise ValueError(f"Last-Event-ID is not an id this feed issued: {exc}") from None


def domain_events(entry: FeedEntry) -> list[tuple[str, dict[str, Any]]]:
    """The (qualified name, payload) pairs one feed entry publishes."""
    if entry.config_id:
        if entry.config is None:
            payload = {"config_id": entry.config_id, "task_id": entry.task_id}
            return [("a2a.tasks.PushNotificationConfigDeleted", payload)]
        created = {
            "row": f"{entry.task_id}/{entry.config_id}",
            "config_id": entry.config_id,
            "task_id": entry.task_id,
        }
        return [("a2a.tasks.PushNotificationConfigCreated", created)]
    # (the first task event is the creation; later ones are snapshots of metadata changes,
    # and journal entries are an agent's own: neither is a seed event)
    return [_event(event) for event in entry.events if _published(event)]


def _published(event: Event) -> bool:
    if event.kind == "journal":
        return False
    return event.kind != "task" or event.seq == 1


def _event(event: Event) -> tuple[str, dict[str, Any]]:
    body = event.body
    if isinstance(body, Task):
        message = body.history[-1] if body.history else None
        payload = {"task_id": body.id, "task": to_builtins(body)}
        if message is not None:
            payload["message"] = to_builtins(message)
        return "a2a.tasks.TaskCreated", payload
    if isinstance(body, TaskStatusUpdateEvent):
        published = status_published(body)
        return published.event, published.payload
    if isinstance(body, TaskArtifactUpdateEvent):
        published = artifact_published(body)
        payload = dict(published.payload)
        payload["append"] = body.append
        payload["lastChunk"] = body.last_chunk
        return published.event, payload
    assert isinstance(body, Message)
    payload = {
        "task_id": event.task_id,
        "context_id": body.context_id,
        "message": to_builtins(body),
    }
    return MESSAGE_ADDED, payload


async def follow(
    engine: Engine, hub: FeedHub, tenant: str, after: tuple[int, int], heartbeat: float
) -> AsyncIterator[bytes]:
    """SSE frames from ``after`` on, forever; a comment line when ``heartbeat`` passes idle."""
    position, index = after
    start = position - 1 if index >= 0 and position > 0 else position
    skip_until = (position, index) if index >= 0 else None
    async with aclosing(batches(engine.store, hub, tenant, start, heartbeat)) as feed:
        async for entries in feed:
            if entries is None:
                yield b": keep-alive\n\n"
                continue
            for entry in entries:
                for number, (name, payload) in enumerate(domain_events(entry)):
                    if skip_until is not None and (entry.position, number) <= skip_until:
                        continue
                    data = json.dumps({"event": name, "tenant": entry.tenant, "payload": payload})
                    yield (
                        f"id: {entry.position}-{number}\nevent: {name}\ndata: {data}\n\n"
                    ).encode()
                skip_until = None
