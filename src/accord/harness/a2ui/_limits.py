"""The bounds of what a task's surfaces may hold, and the error every A2UI check raises.

A model writes surfaces and a participant's client writes actions: both are untrusted, so
every count, depth and size is bounded before anything is stored or shown.
"""

from __future__ import annotations

from typing import Any

from accord.errors import AccordError

MAX_MESSAGES = 50  # A2UI messages in one emit_ui call
MAX_CALL_BYTES = 256 * 1024  # one emit_ui call's messages, as JSON
MAX_SURFACES = 16  # a task's live surfaces
MAX_COMPONENTS = 300  # components on one surface
MAX_ID_CHARS = 128  # a surface's or a component's id
MAX_STRING_CHARS = 10_000  # any string in a message
MAX_LIST_ITEMS = 200  # any array (children, options, tabs …)
MAX_DEPTH = 16  # nesting of any value (data models, function arguments, contexts)
MAX_ACTION_BYTES = 32 * 1024  # one action a participant sends, as JSON


class A2uiError(AccordError, ValueError):
    """An A2UI message that breaks the schema, the basic catalog or a bound: ``path`` names
    the value that fails (``messages[1].updateComponents.components[0].child``)."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"{path}: {what}" if path else what)
        self.path = path
        self.what = what


def check_json(value: Any, path: str, depth: int = 0) -> None:
    """``value`` is plain JSON within the bounds (depth, string and array sizes, keys)."""
    if depth > MAX_DEPTH:
        raise A2uiError(path, f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        if len(value) > MAX_STRING_CHARS:
            raise A2uiError(path, f"longer than {MAX_STRING_CHARS} characters")
    elif isinstance(value, list):
        if len(value) > MAX_LIST_ITEMS:
            raise A2uiError(path, f"more than {MAX_LIST_ITEMS} items")
        for index, item in enumerate(value):
            check_json(item, f"{path}[{index}]", depth + 1)
    elif isinstance(value, dict):
        if len(value) > MAX_LIST_ITEMS:
            raise A2uiError(path, f"more than {MAX_LIST_ITEMS} properties")
        for key, item in value.items():
            if not isinstance(key, str) or len(key) > MAX_ID_CHARS:
                raise A2uiError(
                    path, f"a property name is text of at most {MAX_ID_CHARS} characters"
                )
            check_json(item, f"{path}.{key}", depth + 1)
    elif value is not None and not isinstance(value, bool | int | float):
        raise A2uiError(path, "expected JSON")


__all__ = [
    "MAX_ACTION_BYTES",
    "MAX_CALL_BYTES",
    "MAX_COMPONENTS",
    "MAX_DEPTH",
    "MAX_ID_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_MESSAGES",
    "MAX_STRING_CHARS",
    "MAX_SURFACES",
    "A2uiError",
    "check_json",
]
