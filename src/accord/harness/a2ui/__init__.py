"""A2UI 0.9.1 (the A2UI A2A extension, as tiny-harness speaks it): the model shows surfaces
of the basic catalog with ``emit_ui`` (artifacts named ``a2ui``, parts of media type
``application/a2ui+json``), and a participant's actions on them come back as messages,
accepted only for the surfaces the task created. The checks are pure (``check_messages``,
``parse_client``, ``check_client``); the task's surfaces are folded from its artifacts, so its
log is the truth. See docs/a2ui.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from accord.harness.a2ui._actions import client_events, describe
from accord.harness.a2ui._catalog import COMPONENTS, FUNCTIONS, check_component
from accord.harness.a2ui._limits import (
    MAX_ACTION_BYTES,
    MAX_CALL_BYTES,
    MAX_COMPONENTS,
    MAX_DEPTH,
    MAX_LIST_ITEMS,
    MAX_MESSAGES,
    MAX_STRING_CHARS,
    MAX_SURFACES,
    A2uiError,
)
from accord.harness.a2ui._messages import (
    A2UI_MEDIA_TYPE,
    A2UI_URI,
    A2UI_VERSION,
    ARTIFACT_NAME,
    BASIC_CATALOG_ID,
    ClientEvent,
    Surfaces,
    card_extension,
    check_client,
    check_messages,
    is_a2ui_artifact,
    parse_client,
)

if TYPE_CHECKING:
    from accord.harness.a2ui._tool import EmitUi


def __getattr__(name: str) -> Any:
    # (the tool is imported when first used: the harness's transcript imports this package)
    if name == "EmitUi":
        from accord.harness.a2ui._tool import EmitUi

        return EmitUi
    raise AttributeError(name)


__all__ = [
    "A2UI_MEDIA_TYPE",
    "A2UI_URI",
    "A2UI_VERSION",
    "ARTIFACT_NAME",
    "BASIC_CATALOG_ID",
    "COMPONENTS",
    "FUNCTIONS",
    "MAX_ACTION_BYTES",
    "MAX_CALL_BYTES",
    "MAX_COMPONENTS",
    "MAX_DEPTH",
    "MAX_LIST_ITEMS",
    "MAX_MESSAGES",
    "MAX_STRING_CHARS",
    "MAX_SURFACES",
    "A2uiError",
    "ClientEvent",
    "EmitUi",
    "Surfaces",
    "card_extension",
    "check_client",
    "check_component",
    "check_messages",
    "client_events",
    "describe",
    "is_a2ui_artifact",
    "parse_client",
]
