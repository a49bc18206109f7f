"""The A2UI v0.9 basic catalog, as rules: which components exist, the properties each takes
and what each property holds (a literal, a data binding, a function call), and the catalog's
functions with their arguments.

Written from the A2UI v0.9 specification (``catalogs/basic/catalog.json`` and
``common_types.json``); pure, no I/O. Every check raises :class:`A2uiError` naming the path
of the first value that fails, so a model can correct its call.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from accord.harness.a2ui._limits import MAX_ID_CHARS, MAX_LIST_ITEMS, A2uiError, check_json

Check = Callable[[Any, str], None]

# --- the shapes of common_types.json ---------------------------------------------------------


def _fail(path: str, what: str) -> A2uiError:
    return A2uiError(path, what)


def _object(value: Any, path: str, keys: Mapping[str, Check], required: tuple[str, ...]) -> None:
    """A closed object: only ``keys``, each checked, and ``required`` present."""
    if not isinstance(value, dict):
        raise _fail(path, "expected an object")
    for key in value:
        if key not in keys:
            known = ", ".join(sorted(keys)) or "none"
            raise _fail(f"{path}.{key}", f"unknown property (known: {known})")
    for key in required:
        if key not in value:
            raise _fail(f"{path}.{key}", "required")
    for key, item in value.items():
        keys[key](item, f"{path}.{key}")


def string(value: Any, path: str) -> None:
    if not isinstance(value, str):
        raise _fail(path, "expected a string")


def component_id(value: Any, path: str) -> None:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_CHARS:
        raise _fail(path, f"expected a component id (1 to {MAX_ID_CHARS} characters)")


def number(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(path, "expected a number")


def count(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(path, "expected an integer of at least 0")


def boolean(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        raise _fail(path, "expected true or false")


def anything(value: Any, path: str) -> None:
    check_json(value, path)


def one_of(*choices: str) -> Check:
    def check(value: Any, path: str) -> None:
        if value not in choices:
            raise _fail(path, f"expected one of {', '.join(choices)}")

    return check


def array_of(item: Check, *, minimum: int = 0) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise _fail(path, "expected an array")
        if not minimum <= len(value) <= MAX_LIST_ITEMS:
            raise _fail(path, f"expected {minimum} to {MAX_LIST_ITEMS} items")
        for index, element in enumerate(value):
            item(element, f"{path}[{index}]")

    return check


def closed(keys: Mapping[str, Check], *required: str) -> Check:
    return lambda value, path: _object(value, path, keys, required)


def data_binding(value: Any, path: str) -> None:
    _object(value, path, {"path": string}, ("path",))


def _named(table: Mapping[str, Any], name: Any, path: str, what: str) -> Any:
    """``table[name]``, or the error listing the names there are."""
    if not isinstance(name, str) or name not in table:
        raise _fail(path, f"expected {what}: {', '.join(table)}")
    return table[name]


RETURN_TYPES = ("string", "number", "boolean", "array", "object", "any", "void")


def function_call(value: Any, path: str, returns: str | None = None) -> None:
    """``{call, args, returnType}``: a function of the catalog with its arguments; a dynamic
    value of type ``returns`` only takes a call that (says it) returns that type."""
    if not isinstance(value, dict):
        raise _fail(path, "expected an object")
    name = value.get("call")
    args, required, result = _named(
        FUNCTIONS, name, f"{path}.call", "one of the catalog's functions"
    )
    keys: dict[str, Check] = {"call": string, "args": closed(args, *required)}
    keys["returnType"] = one_of(result)
    _object(value, path, keys, ("call", "args"))
    if returns not in (None, "any") and result != returns:
        raise _fail(f"{path}.call", f"{name} returns {result}, not {returns}")


def dynamic(literal: Check, returns: str) -> Check:
    """A literal, a data binding ``{path}`` or a function call returning ``returns``."""

    def check(value: Any, path: str) -> None:
        if isinstance(value, dict):
            if "call" in value:
                function_call(value, path, returns)
            else:
                data_binding(value, path)
            return
        literal(value, path)

    return check


def _literal_value(value: Any, path: str) -> None:
    if isinstance(value, list):
        check_json(value, path)
        return
    if isinstance(value, bool | str):
        return
    number(value, path)


dynamic_string = dynamic(string, "string")
dynamic_number = dynamic(number, "number")
dynamic_boolean = dynamic(boolean, "boolean")
dynamic_string_list = dynamic(array_of(string), "array")
dynamic_value = dynamic(_literal_value, "any")


def _function_arg(value: Any, path: str) -> None:
    if isinstance(value, dict) and "call" not in value and "path" not in value:
        check_json(value, path)  # (an object argument)
        return
    dynamic_value(value, path)


child_list_template = closed({"componentId": component_id, "path": string}, "componentId", "path")


def child_list(value: Any, path: str) -> None:
    if isinstance(value, dict):
        child_list_template(value, path)
    else:
        array_of(component_id)(value, path)


event = closed({"name": string, "context": lambda v, p: _context(v, p)}, "name")


def _context(value: Any, path: str) -> None:
    if not isinstance(value, dict):
        raise _fail(path, "expected an object")
    if len(value) > MAX_LIST_ITEMS:
        raise _fail(path, f"at most {MAX_LIST_ITEMS} entries")
    for key, item in value.items():
        dynamic_value(item, f"{path}.{key}")


def action(value: Any, path: str) -> None:
    if isinstance(value, dict) and "functionCall" in value:
        _object(value, path, {"functionCall": function_call}, ("functionCall",))
    else:
        _object(value, path, {"event": event}, ("event",))


check_rule = closed({"condition": dynamic_boolean, "message": string}, "condition", "message")
accessibility = closed({"label": dynamic_string})

# --- the catalog's functions: arguments, required ones, return type ------------------------

FUNCTIONS: dict[str, tuple[dict[str, Check], tuple[str, ...], str]] = {
    "required": ({"value": _function_arg}, ("value",), "boolean"),
    "regex": ({"value": dynamic_string, "pattern": string}, ("value", "pattern"), "boolean"),
    "length": (
        {"value": dynamic_string, "min": count, "max": count},
        ("value",),
        "boolean",
    ),
    "numeric": (
        {"value": dynamic_number, "min": number, "max": number},
        ("value",),
        "boolean",
    ),
    "email": ({"value": dynamic_string}, ("value",), "boolean"),
    "formatString": ({"value": dynamic_string}, ("value",), "string"),
    "formatNumber": (
        {"value": dynamic_number, "decimals": dynamic_number, "grouping": dynamic_boolean},
        ("value",),
        "string",
    ),
    "formatCurrency": (
        {
            "value": dynamic_number,
            "currency": dynamic_string,
            "decimals": dynamic_number,
            "grouping": dynamic_boolean,
        },
        ("value", "currency"),
        "string",
    ),
    "formatDate": (
        {"value": dynamic_value, "format": dynamic_string},
        ("value", "format"),
        "string",
    ),
    "pluralize": (
        {
            "value": dynamic_number,
            **{k: dynamic_string for k in ("zero", "one", "two", "few", "many", "other")},
        },
        ("value", "other"),
        "string",
    ),
    "openUrl": ({"url": string}, ("url",), "void"),
    "and": ({"values": array_of(dynamic_boolean, minimum=2)}, ("values",), "boolean"),
    "or": ({"values": array_of(dynamic_boolean, minimum=2)}, ("values",), "boolean"),
    "not": ({"value": dynamic_boolean}, ("value",), "boolean"),
}

# --- the catalog's components ----------------------------------------------------------------

ICONS = [
    "accountCircle",
    "add",
    "arrowBack",
    "arrowForward",
    "attachFile",
    "calendarToday",
    "call",
    "camera",
    "check",
    "close",
    "delete",
    "download",
    "edit",
    "event",
    "error",
    "fastForward",
    "favorite",
    "favoriteOff",
    "folder",
    "help",
    "home",
    "info",
    "locationOn",
    "lock",
    "lockOpen",
    "mail",
    "menu",
    "moreVert",
    "moreHoriz",
    "notificationsOff",
    "notifications",
    "pause",
    "payment",
    "person",
    "phone",
    "photo",
    "play",
    "print",
    "refresh",
    "rewind",
    "search",
    "send",
    "settings",
    "share",
    "shoppingCart",
    "skipNext",
    "skipPrevious",
    "star",
    "starHalf",
    "starOff",
    "stop",
    "upload",
    "visibility",
    "visibilityOff",
    "volumeDown",
    "volumeMute",
    "volumeOff",
    "volumeUp",
    "warning",
]


def _icon_name(value: Any, path: str) -> None:
    if isinstance(value, str):
        one_of(*ICONS)(value, path)
    elif isinstance(value, dict) and "svgPath" in value:
        _object(value, path, {"svgPath": string}, ("svgPath",))
    else:
        data_binding(value, path)


DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def _date_bound(value: Any, path: str) -> None:
    """A DateTimeInput's ``min`` or ``max``: a data binding or a function call. (The schema
    also takes a literal date, time or date-time, under a ``oneOf`` of three formats that
    tiny-harness's clients, which do not assert formats, find all matching: they refuse the
    whole surface. A literal is refused here, so that every surface renders there too.)"""
    if isinstance(value, str):
        raise _fail(
            path, 'bind it to the data model ({"path": "/…"}): a literal date is not accepted'
        )
    dynamic_string(value, path)


def _tab(value: Any, path: str) -> None:
    _object(value, path, {"title": dynamic_string, "child": component_id}, ("title", "child"))


def _option(value: Any, path: str) -> None:
    _object(value, path, {"label": dynamic_string, "value": string}, ("label", "value"))


# name -> (its own properties, the required ones, whether it takes ``checks``)
COMPONENTS: dict[str, tuple[dict[str, Check], tuple[str, ...], bool]] = {
    "Text": (
        {
            "text": dynamic_string,
            "variant": one_of("h1", "h2", "h3", "h4", "h5", "caption", "body"),
        },
        ("text",),
        False,
    ),
    "Image": (
        {
            "url": dynamic_string,
            "description": dynamic_string,
            "fit": one_of("contain", "cover", "fill", "none", "scaleDown"),
            "variant": one_of(
                "icon", "avatar", "smallFeature", "mediumFeature", "largeFeature", "header"
            ),
        },
        ("url",),
        False,
    ),
    "Icon": ({"name": _icon_name}, ("name",), False),
    "Video": ({"url": dynamic_string}, ("url",), False),
    "AudioPlayer": ({"url": dynamic_string, "description": dynamic_string}, ("url",), False),
    "Row": (
        {
            "children": child_list,
            "justify": one_of(
                "center", "end", "spaceAround", "spaceBetween", "spaceEvenly", "start", "stretch"
            ),
            "align": one_of("start", "center", "end", "stretch"),
        },
        ("children",),
        False,
    ),
    "Column": (
        {
            "children": child_list,
            "justify": one_of(
                "start", "center", "end", "spaceBetween", "spaceAround", "spaceEvenly", "stretch"
            ),
            "align": one_of("center", "end", "start", "stretch"),
        },
        ("children",),
        False,
    ),
    "List": (
        {
            "children": child_list,
            "direction": one_of("vertical", "horizontal"),
            "align": one_of("start", "center", "end", "stretch"),
        },
        ("children",),
        False,
    ),
    "Card": ({"child": component_id}, ("child",), False),
    "Tabs": ({"tabs": array_of(_tab, minimum=1)}, ("tabs",), False),
    "Modal": ({"trigger": component_id, "content": component_id}, ("trigger", "content"), False),
    "Divider": ({"axis": one_of("horizontal", "vertical")}, (), False),
    "Button": (
        {
            "child": component_id,
            "variant": one_of("default", "primary", "borderless"),
            "action": action,
        },
        ("child", "action"),
        True,
    ),
    "TextField": (
        {
            "label": dynamic_string,
            "value": dynamic_string,
            "variant": one_of("longText", "number", "shortText", "obscured"),
            "validationRegexp": string,
        },
        ("label",),
        True,
    ),
    "CheckBox": ({"label": dynamic_string, "value": dynamic_boolean}, ("label", "value"), True),
    "ChoicePicker": (
        {
            "label": dynamic_string,
            "variant": one_of("multipleSelection", "mutuallyExclusive"),
            "options": array_of(_option),
            "value": dynamic_string_list,
            "displayStyle": one_of("checkbox", "chips"),
            "filterable": boolean,
        },
        ("options", "value"),
        True,
    ),
    "Slider": (
        {"label": dynamic_string, "min": number, "max": number, "value": dynamic_number},
        ("value", "max"),
        True,
    ),
    "DateTimeInput": (
        {
            "value": dynamic_string,
            "enableDate": boolean,
            "enableTime": boolean,
            "min": _date_bound,
            "max": _date_bound,
            "label": dynamic_string,
        },
        ("value",),
        True,
    ),
}

_COMMON: dict[str, Check] = {
    "id": component_id,
    "component": string,
    "accessibility": accessibility,
    "weight": number,
}


def check_component(value: Any, path: str) -> None:
    """One component of the basic catalog (``{"id", "component", …its properties}``)."""
    if not isinstance(value, dict):
        raise _fail(path, "expected a component object")
    found = _named(
        COMPONENTS, value.get("component"), f"{path}.component", "a basic catalog component"
    )
    own, required, checkable = found
    keys = {**_COMMON, **own}
    if checkable:
        keys["checks"] = array_of(check_rule)
    _object(value, path, keys, ("id", "component", *required))


def theme(value: Any, path: str) -> None:
    """The catalog's theme: ``primaryColor`` (#rrggbb), ``iconUrl``, ``agentDisplayName``;
    other properties are allowed (and bounded)."""
    if not isinstance(value, dict):
        raise _fail(path, "expected an object")
    check_json(value, path)
    color = value.get("primaryColor")
    if color is not None and not (
        isinstance(color, str) and re.fullmatch(r"#[0-9a-fA-F]{6}", color)
    ):
        raise _fail(f"{path}.primaryColor", "expected a colour as #rrggbb")
    for key in ("iconUrl", "agentDisplayName"):
        if key in value:
            string(value[key], f"{path}.{key}")


__all__ = ["COMPONENTS", "DATE_TIME", "FUNCTIONS", "check_component", "theme"]
