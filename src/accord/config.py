"""Checking configuration values, from a TOML file, the environment, a flag or an agent's
module, with errors that name where the value came from and what was expected:
``bad.toml: port: expected an integer, got 'abc'``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from accord.errors import AccordError

TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")
_MEDIA_TYPE = re.compile(r"[\w.+-]+/[\w.+*-]+(\s*;.*)?")


class ConfigError(AccordError, ValueError):
    """A configuration value was refused; the message names its source and the setting."""


def shown(value: Any) -> str:
    """A value as an error message shows it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return repr(value)
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def refuse(where: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"{where}: expected {expected}, got {shown(value)}")


def boolean(value: Any, where: str) -> bool:
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS or word in FALSE_WORDS:
            return word in TRUE_WORDS
    if isinstance(value, bool):
        return value
    raise refuse(where, "true or false", value)


def integer(value: Any, where: str) -> int:
    return int(_number(value, where, int, "an integer"))


def number(value: Any, where: str) -> float:
    return _number(value, where, float, "a number")


def _number(value: Any, where: str, kind: type[float], expected: str) -> float:
    """A number written as one (TOML; an integer is a float too, a boolean is neither) or as
    text (the environment)."""
    if isinstance(value, str):
        try:
            return kind(value.strip())
        except ValueError:
            pass
    elif isinstance(value, kind | int) and not isinstance(value, bool):
        return kind(value)
    raise refuse(where, expected, value)


def text(value: Any, where: str, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise refuse(where, "a string", value)
    if not empty and not value.strip():
        raise ConfigError(f"{where}: must not be empty")
    return value


def texts(value: Any, where: str, *, split: bool = False) -> list[str]:
    """A list of strings; with ``split``, a comma-separated string too (the environment)."""
    if split and isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    raise refuse(where, "a list of strings", value)


def url(value: Any, where: str) -> str:
    """An absolute http(s) URL."""
    checked = text(value, where)
    parts = urlsplit(checked)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise refuse(where, "an absolute http(s) URL", value)
    return checked


def media_types(value: Any, where: str, *, split: bool = False) -> list[str]:
    """A list of media types (``type/subtype``)."""
    items = texts(value, where, split=split)
    for index, item in enumerate(items):
        if not _MEDIA_TYPE.fullmatch(item):
            raise refuse(f"{where}[{index}]", "a media type like 'text/plain'", item)
    return items


def port(value: int, where: str, *, allow_zero: bool = False) -> int:
    low = 0 if allow_zero else 1
    if not low <= value <= 65535:
        raise ConfigError(f"{where}: expected a port number from {low} to 65535, got {value}")
    return value


def table(value: Any, where: str, known: tuple[str, ...]) -> dict[str, Any]:
    """A table with only ``known`` keys; ``-`` and camelCase keys are read as snake_case (so
    ``documentationUrl``, as the card's JSON spells it, is ``documentation_url``)."""
    if not isinstance(value, Mapping):
        raise refuse(where, "a table", value)
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = snake_case(str(key))
        if name not in known:
            raise ConfigError(f"{where}.{key}: unknown field (known fields: {', '.join(known)})")
        out[name] = item
    return out


def snake_case(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key).replace("-", "_").lower()
