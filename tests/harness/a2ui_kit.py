"""A2UI surfaces for tests: a small order form of the basic catalog (text, a choice, a text
field, a confirm button in a card), as a model would emit it, and the action its button
sends."""

from __future__ import annotations

from typing import Any

from accord.harness.a2ui import A2UI_MEDIA_TYPE, BASIC_CATALOG_ID

SURFACE = "refund-form"


def create(surface: str = SURFACE) -> dict[str, Any]:
    return {
        "version": "v0.9.1",
        "createSurface": {"surfaceId": surface, "catalogId": BASIC_CATALOG_ID},
    }


def components(surface: str = SURFACE) -> dict[str, Any]:
    return {
        "version": "v0.9.1",
        "updateComponents": {
            "surfaceId": surface,
            "components": [
                {"id": "root", "component": "Card", "child": "body"},
                {
                    "id": "body",
                    "component": "Column",
                    "children": ["title", "choice", "note", "confirm"],
                },
                {
                    "id": "title",
                    "component": "Text",
                    "text": "Order #48213: how shall we fix it?",
                    "variant": "h2",
                },
                {
                    "id": "choice",
                    "component": "ChoicePicker",
                    "label": "Remedy",
                    "variant": "mutuallyExclusive",
                    "options": [
                        {"label": "Refund", "value": "refund"},
                        {"label": "Replacement", "value": "replace"},
                    ],
                    "value": {"path": "/remedy"},
                },
                {
                    "id": "note",
                    "component": "TextField",
                    "label": "Note",
                    "value": {"path": "/note"},
                },
                {"id": "confirm-label", "component": "Text", "text": "Confirm"},
                {
                    "id": "confirm",
                    "component": "Button",
                    "child": "confirm-label",
                    "variant": "primary",
                    "action": {
                        "event": {
                            "name": "confirm",
                            "context": {"remedy": {"path": "/remedy"}, "note": {"path": "/note"}},
                        }
                    },
                },
            ],
        },
    }


def data_model(surface: str = SURFACE) -> dict[str, Any]:
    return {
        "version": "v0.9.1",
        "updateDataModel": {
            "surfaceId": surface,
            "path": "/",
            "value": {"remedy": ["refund"], "note": ""},
        },
    }


def form(surface: str = SURFACE) -> list[dict[str, Any]]:
    return [create(surface), components(surface), data_model(surface)]


def action(
    name: str = "confirm",
    surface: str = SURFACE,
    source: str = "confirm",
    context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "version": "v0.9.1",
        "action": {
            "name": name,
            "surfaceId": surface,
            "sourceComponentId": source,
            "timestamp": "2026-12-04T18:00:00Z",
            "context": context if context is not None else {"remedy": ["replace"], "note": "asap"},
        },
    }


__all__ = ["A2UI_MEDIA_TYPE", "SURFACE", "action", "components", "create", "data_model", "form"]
