"""The shapes tiny-harness's clients read accord's A2UI artifacts with, as JSON Schemas, and a
checker of a task's ``a2ui`` artifacts.

Written from the reference (docs: tiny-harness.md "Renderers", §3.1) and tiny-harness 0.9's TUI:
its renderer takes an artifact's data parts of ``application/a2ui+json`` and parses each as a
server message — the A2UI v0.9 message schema (a version and exactly one of the four bodies,
each closed), then its typed models (``surfaceId`` not empty, ``components`` not empty) — and
draws the components from ``root``: a component is an object with a text ``id`` and a
``component`` of the basic catalog, a Button's ``child`` names its label, a ChoicePicker's
options carry a label and a value. One message outside these, and its TUI cannot draw the
surface.

Two quirks of its validator are encoded too: it does not assert formats, so a
DateTimeInput's ``min`` or ``max`` given as a literal string matches all three branches of the
schema's ``oneOf`` (date, time, date-time) and is refused; and a Tabs needs one tab at least.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jsonschema

MEDIA = "application/a2ui+json"
BASIC_CATALOG = "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"
COMPONENTS = [
    "Text", "Image", "Icon", "Video", "AudioPlayer", "Row", "Column", "List", "Card", "Tabs",
    "Modal", "Divider", "Button", "TextField", "CheckBox", "ChoicePicker", "Slider",
    "DateTimeInput",
]  # fmt: skip
SURFACE_ID = {"type": "string", "minLength": 1}
BINDING_OR_CALL = {"type": "object"}

COMPONENT: dict[str, Any] = {
    "type": "object",
    "required": ["id", "component"],
    "properties": {"id": {"type": "string"}, "component": {"enum": COMPONENTS}},
    "allOf": [
        {
            "if": {"properties": {"component": {"const": "Button"}}},
            "then": {"required": ["child", "action"], "properties": {"child": {"type": "string"}}},
        },
        {
            "if": {"properties": {"component": {"const": "ChoicePicker"}}},
            "then": {
                "required": ["options", "value"],
                "properties": {
                    "options": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["label", "value"],
                            "properties": {"label": {}, "value": {"type": "string"}},
                            "additionalProperties": False,
                        },
                    }
                },
            },
        },
        {
            "if": {"properties": {"component": {"const": "DateTimeInput"}}},
            "then": {"properties": {"min": BINDING_OR_CALL, "max": BINDING_OR_CALL}},
        },
        {
            "if": {"properties": {"component": {"const": "Tabs"}}},
            "then": {"required": ["tabs"], "properties": {"tabs": {"minItems": 1}}},
        },
    ],
}


def _message(kind: str, body: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["version", kind],
        "properties": {
            "version": {"enum": ["v0.9", "v0.9.1"]},
            kind: {
                "type": "object",
                "properties": body,
                "required": required,
                "additionalProperties": False,
            },
        },
        "additionalProperties": False,
    }


SERVER_MESSAGE: dict[str, Any] = {
    "oneOf": [
        _message(
            "createSurface",
            {
                "surfaceId": SURFACE_ID,
                "catalogId": {"const": BASIC_CATALOG},
                "theme": {"type": "object"},
                "sendDataModel": {"type": "boolean"},
            },
            ["surfaceId", "catalogId"],
        ),
        _message(
            "updateComponents",
            {
                "surfaceId": SURFACE_ID,
                "components": {"type": "array", "minItems": 1, "items": COMPONENT},
            },
            ["surfaceId", "components"],
        ),
        _message(
            "updateDataModel",
            {"surfaceId": SURFACE_ID, "path": {"type": "string"}, "value": {}},
            ["surfaceId"],
        ),
        _message("deleteSurface", {"surfaceId": SURFACE_ID}, ["surfaceId"]),
    ]
}

VALIDATOR = jsonschema.Draft202012Validator(SERVER_MESSAGE)


def check_artifacts(artifacts: Iterable[dict[str, Any]]) -> int:
    """Every ``a2ui`` artifact (ProtoJSON, as a client reads it) as tiny-harness's TUI parses
    it: named ``a2ui``, id ``a2ui:<n>``, each part a data part of the A2UI media type holding a
    server message of the shapes above. The number of messages checked."""
    checked = 0
    for artifact in artifacts:
        if artifact.get("name") != "a2ui":
            continue
        assert str(artifact.get("artifactId", "")).startswith("a2ui:"), artifact
        for part in artifact.get("parts", []):
            assert part.get("mediaType") == MEDIA, part
            VALIDATOR.validate(part.get("data"))
            checked += 1
    return checked
