"""A participant's A2UI message on the way in: accepted only for the surfaces this task
created (an action from a component on one of them that sends that action), checked, and
shown to the model as a framed event. Pure: the task and the message in, a refusal out."""

from __future__ import annotations

import json
from typing import Any

from accord.harness.a2ui._limits import A2uiError
from accord.harness.a2ui._messages import (
    A2UI_MEDIA_TYPE,
    ClientEvent,
    Surfaces,
    check_client,
    parse_client,
)
from accord.wire import UNSET, Message, Part, Task, invalid_params

ACTION_PREVIEW = 4_000  # characters of an action's context a model sees


def client_events(message: Message, task: Task | None) -> list[ClientEvent]:
    """The A2UI messages ``message`` carries, each checked against the surfaces ``task``
    created (none: a message that carries none); a refusal (InvalidParams) names the part's
    field that fails and why."""
    found: list[ClientEvent] = []
    for index, part in enumerate(message.parts):
        if part.media_type != A2UI_MEDIA_TYPE:
            continue
        field = f"message.parts[{index}]"
        if found:
            raise invalid_params(field, "a message carries at most one A2UI message")
        if part.data is UNSET:
            raise invalid_params(field, "an A2UI message is a data part")
        try:
            event = parse_client(part.data, f"{field}.data")
            if task is None:
                raise A2uiError(
                    f"{field}.data", "an A2UI action answers a surface of an existing task"
                )
            check_client(event, Surfaces.of(task.artifacts or ()), f"{field}.data")
        except A2uiError as refused:
            raise invalid_params(refused.path, refused.what) from None
        found.append(event)
    return found


def describe(part: Part, sender: str) -> str | None:
    """An A2UI part as the model reads it: ``[ui action from alice] {…}`` with the action's
    name, surface, component and context (None: not an A2UI part)."""
    if part.media_type != A2UI_MEDIA_TYPE or not isinstance(part.data, dict):
        return None
    data: dict[str, Any] = part.data
    kind = "action" if "action" in data else "error"
    body = data.get(kind)
    if not isinstance(body, dict):
        return f"[ui {kind} from {sender}]"
    shown = {k: v for k, v in body.items() if k != "timestamp"}
    text = json.dumps(shown, sort_keys=True, ensure_ascii=False)
    if len(text) > ACTION_PREVIEW:
        text = text[:ACTION_PREVIEW] + "…"
    return f"[ui {kind} from {sender}] {text}"


__all__ = ["ACTION_PREVIEW", "client_events", "describe"]
