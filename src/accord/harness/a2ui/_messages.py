"""A2UI v0.9 messages: the four a server sends (``createSurface``, ``updateComponents``,
``updateDataModel``, ``deleteSurface``) checked against the schema, the basic catalog and the
surfaces a task has; the two a client sends (``action``, ``error``); and the surfaces a task
created, folded from its ``a2ui`` artifacts — its log is the truth, so every node and every
restart sees the same surfaces.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from accord.harness.a2ui._catalog import DATE_TIME, check_component, theme
from accord.harness.a2ui._limits import (
    MAX_ACTION_BYTES,
    MAX_CALL_BYTES,
    MAX_COMPONENTS,
    MAX_ID_CHARS,
    MAX_LIST_ITEMS,
    MAX_MESSAGES,
    MAX_SURFACES,
    A2uiError,
    check_json,
)
from accord.wire import AgentExtension

A2UI_VERSION = "v0.9.1"
VERSIONS = ("v0.9", "v0.9.1")
A2UI_URI = "https://a2ui.org/a2a-extension/a2ui/v0.9.1"
A2UI_MEDIA_TYPE = "application/a2ui+json"
BASIC_CATALOG_ID = "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"
ARTIFACT_NAME = "a2ui"
ARTIFACT_PREFIX = "a2ui:"
SERVER_KINDS = ("createSurface", "updateComponents", "updateDataModel", "deleteSurface")


@dataclass
class Surfaces:
    """The live surfaces of a task: for each, its components' ids with the name of the event
    each sends (None: a component that sends none)."""

    live: dict[str, dict[str, str | None]] = field(default_factory=dict)

    def copy(self) -> Surfaces:
        return Surfaces({surface: dict(parts) for surface, parts in self.live.items()})

    def apply(self, message: dict[str, Any]) -> None:
        """``message`` (checked) as the renderer applies it."""
        if "createSurface" in message:
            self.live.setdefault(message["createSurface"]["surfaceId"], {})
        elif "updateComponents" in message:
            body = message["updateComponents"]
            parts = self.live.setdefault(body["surfaceId"], {})
            for component in body["components"]:
                parts[component["id"]] = _event_name(component)
        elif "deleteSurface" in message:
            self.live.pop(message["deleteSurface"]["surfaceId"], None)

    @classmethod
    def of(cls, artifacts: Iterable[Any]) -> Surfaces:
        """The surfaces a task's artifacts (``Task.artifacts``) leave: its ``a2ui``
        artifacts' messages, in order."""
        surfaces = cls()
        for artifact in artifacts:
            if not is_a2ui_artifact(artifact):
                continue
            for part in artifact.parts:
                if part.media_type == A2UI_MEDIA_TYPE and isinstance(part.data, dict):
                    try:
                        surfaces.apply(part.data)
                    except (KeyError, TypeError):
                        continue  # (only emit_ui writes these, checked)
        return surfaces


def card_extension() -> AgentExtension:
    """The card's A2UI extension: the basic catalog only, no inline catalogs."""
    return AgentExtension(
        uri=A2UI_URI,
        required=False,
        description="A2UI 0.9.1 surfaces and actions as application/a2ui+json parts",
        params={"supportedCatalogIds": [BASIC_CATALOG_ID], "acceptsInlineCatalogs": False},
    )


def is_a2ui_artifact(artifact: Any) -> bool:
    return artifact.name == ARTIFACT_NAME and str(artifact.artifact_id).startswith(ARTIFACT_PREFIX)


def next_artifact_id(artifacts: Iterable[Any]) -> str:
    """``a2ui:<seq>``: one more than the task's ``a2ui`` artifacts so far."""
    return f"{ARTIFACT_PREFIX}{sum(1 for a in artifacts if is_a2ui_artifact(a)) + 1}"


def _event_name(component: dict[str, Any]) -> str | None:
    action = component.get("action")
    if isinstance(action, dict) and isinstance(action.get("event"), dict):
        name = action["event"].get("name")
        return name if isinstance(name, str) else None
    return None


def _bounded_json(value: Any, path: str, limit: int) -> None:
    """``value`` is JSON of at most ``limit`` bytes."""
    try:
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError):
        raise A2uiError(path, "expected JSON") from None
    if size > limit:
        raise A2uiError(path, f"{size} bytes; at most {limit}")


# --- server messages -------------------------------------------------------------------------


def check_messages(messages: Any, surfaces: Surfaces, path: str = "messages") -> Surfaces:
    """``messages`` (a list of server messages) checked in order against ``surfaces`` (the
    task's, before them): the surfaces after them, or :class:`A2uiError` naming the value
    that fails."""
    if not isinstance(messages, list) or not messages:
        raise A2uiError(path, "expected a non-empty array of A2UI messages")
    if len(messages) > MAX_MESSAGES:
        raise A2uiError(path, f"at most {MAX_MESSAGES} messages in one call")
    _bounded_json(messages, path, MAX_CALL_BYTES)
    after = surfaces.copy()
    for index, message in enumerate(messages):
        check_message(message, after, f"{path}[{index}]")
        after.apply(message)
    return after


def check_message(message: Any, surfaces: Surfaces, path: str) -> None:
    """One server message, against the surfaces before it."""
    if not isinstance(message, dict):
        raise A2uiError(path, "expected an A2UI message object")
    check_json(message, path)
    kinds = [kind for kind in SERVER_KINDS if kind in message]
    unknown = sorted(set(message) - {"version", *SERVER_KINDS})
    if unknown:
        raise A2uiError(
            f"{path}.{unknown[0]}",
            f"unknown property (expected version and one of {', '.join(SERVER_KINDS)})",
        )
    if len(kinds) != 1:
        raise A2uiError(path, f"expected exactly one of {', '.join(SERVER_KINDS)}")
    if message.get("version") not in VERSIONS:
        raise A2uiError(f"{path}.version", f"expected {' or '.join(VERSIONS)}")
    kind = kinds[0]
    body = message[kind]
    where = f"{path}.{kind}"
    keys = {
        "createSurface": ("surfaceId", "catalogId", "theme", "sendDataModel"),
        "updateComponents": ("surfaceId", "components"),
        "updateDataModel": ("surfaceId", "path", "value"),
        "deleteSurface": ("surfaceId",),
    }[kind]
    if not isinstance(body, dict):
        raise A2uiError(where, "expected an object")
    for key in body:
        if key not in keys:
            raise A2uiError(f"{where}.{key}", f"unknown property (known: {', '.join(keys)})")
    surface = body.get("surfaceId")
    if not isinstance(surface, str) or not 1 <= len(surface) <= MAX_ID_CHARS:
        raise A2uiError(f"{where}.surfaceId", f"required: an id of 1 to {MAX_ID_CHARS} characters")
    if kind == "createSurface":
        _check_create(body, surfaces, where)
        return
    if surface not in surfaces.live:
        raise A2uiError(f"{where}.surfaceId", f"no surface {surface!r}: createSurface it first")
    if kind == "updateComponents":
        _check_components(body.get("components"), surfaces.live[surface], f"{where}.components")
    elif kind == "updateDataModel":
        pointer = body.get("path", "/")
        if not isinstance(pointer, str) or not pointer.startswith("/"):
            raise A2uiError(f"{where}.path", "expected a JSON pointer (/a/b)")


def _check_create(body: dict[str, Any], surfaces: Surfaces, where: str) -> None:
    surface = body["surfaceId"]
    if body.get("catalogId") != BASIC_CATALOG_ID:
        raise A2uiError(f"{where}.catalogId", f"required: the basic catalog, {BASIC_CATALOG_ID}")
    if surface in surfaces.live:
        raise A2uiError(f"{where}.surfaceId", f"surface {surface!r} exists: deleteSurface it first")
    if len(surfaces.live) >= MAX_SURFACES:
        raise A2uiError(where, f"a task has at most {MAX_SURFACES} surfaces at once")
    if "theme" in body:
        theme(body["theme"], f"{where}.theme")
    if "sendDataModel" in body and not isinstance(body["sendDataModel"], bool):
        raise A2uiError(f"{where}.sendDataModel", "expected true or false")


def _check_components(components: Any, known: dict[str, str | None], where: str) -> None:
    if not isinstance(components, list) or not components:
        raise A2uiError(where, "required: a non-empty array of components")
    if len(components) > MAX_LIST_ITEMS:
        raise A2uiError(where, f"at most {MAX_LIST_ITEMS} components in one message")
    seen: set[str] = set()
    for index, component in enumerate(components):
        check_component(component, f"{where}[{index}]")
        if component["id"] in seen:
            raise A2uiError(f"{where}[{index}].id", f"{component['id']!r} twice in one message")
        seen.add(component["id"])
    if len(known.keys() | seen) > MAX_COMPONENTS:
        raise A2uiError(where, f"a surface has at most {MAX_COMPONENTS} components")


# --- client messages -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClientEvent:
    """A participant's A2UI message: an ``action`` (a button pressed, with its context) or
    an ``error`` their renderer reports."""

    kind: str  # "action" or "error"
    surface_id: str
    body: dict[str, Any]  # the message's action or error object, checked
    payload: dict[str, Any] = dataclasses.field(default_factory=dict)  # the whole message

    @property
    def name(self) -> str:
        return str(self.body.get("name", self.body.get("code", "")))

    @property
    def source(self) -> str:
        return str(self.body.get("sourceComponentId", ""))


def parse_client(data: Any, path: str) -> ClientEvent:
    """A client message (``{"version", "action"}`` or ``{"version", "error"}``), checked
    against the schema and the bounds."""
    if not isinstance(data, dict):
        raise A2uiError(path, "expected an A2UI client message object")
    _bounded_json(data, path, MAX_ACTION_BYTES)
    check_json(data, path)
    kinds = [kind for kind in ("action", "error") if kind in data]
    unknown = sorted(set(data) - {"version", "action", "error"})
    if unknown:
        raise A2uiError(
            f"{path}.{unknown[0]}", "unknown property (expected version and action or error)"
        )
    if len(kinds) != 1:
        raise A2uiError(path, "expected exactly one of action, error")
    if data.get("version") not in VERSIONS:
        raise A2uiError(f"{path}.version", f"expected {' or '.join(VERSIONS)}")
    kind = kinds[0]
    body = data[kind]
    where = f"{path}.{kind}"
    if not isinstance(body, dict):
        raise A2uiError(where, "expected an object")
    if kind == "action":
        for key in ("name", "surfaceId", "sourceComponentId", "timestamp"):
            if not isinstance(body.get(key), str) or not body[key]:
                raise A2uiError(f"{where}.{key}", "required text")
        if not DATE_TIME.fullmatch(body["timestamp"]):
            raise A2uiError(f"{where}.timestamp", "expected an ISO 8601 date-time")
        if not isinstance(body.get("context"), dict):
            raise A2uiError(f"{where}.context", "required: an object")
    else:
        for key in ("code", "surfaceId", "message"):
            if not isinstance(body.get(key), str):
                raise A2uiError(f"{where}.{key}", "required text")
        if body["code"] == "VALIDATION_FAILED":
            if not isinstance(body.get("path"), str):
                raise A2uiError(f"{where}.path", "required text")
            extra = sorted(set(body) - {"code", "surfaceId", "message", "path"})
            if extra:
                raise A2uiError(f"{where}.{extra[0]}", "unknown property")
    return ClientEvent(kind, body["surfaceId"], body, data)


def check_client(event: ClientEvent, surfaces: Surfaces, path: str) -> None:
    """An action names a surface the task created, a component on it that sends an event,
    and that event's name; an error names a surface the task created."""
    where = f"{path}.{event.kind}"
    parts = surfaces.live.get(event.surface_id)
    if parts is None:
        raise A2uiError(f"{where}.surfaceId", f"this task has no surface {event.surface_id!r}")
    if event.kind != "action":
        return
    if event.source not in parts:
        raise A2uiError(
            f"{where}.sourceComponentId",
            f"surface {event.surface_id!r} has no component {event.source!r}",
        )
    sends = parts[event.source]
    if sends is None:
        raise A2uiError(f"{where}.sourceComponentId", f"component {event.source!r} sends no action")
    if sends != event.name:
        raise A2uiError(f"{where}.name", f"component {event.source!r} sends {sends!r}")


__all__ = [
    "A2UI_MEDIA_TYPE",
    "A2UI_URI",
    "A2UI_VERSION",
    "ARTIFACT_NAME",
    "ARTIFACT_PREFIX",
    "BASIC_CATALOG_ID",
    "SERVER_KINDS",
    "VERSIONS",
    "ClientEvent",
    "Surfaces",
    "card_extension",
    "check_client",
    "check_message",
    "check_messages",
    "is_a2ui_artifact",
    "next_artifact_id",
    "parse_client",
]
