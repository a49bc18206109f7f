"""One error tree: every exception class accord defines descends from accord.errors.AccordError,
so ``except AccordError`` catches whatever accord raises on purpose."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import accord
from accord.errors import AccordError


def accord_modules() -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages(accord.__path__, "accord.")
        if "._proto" not in info.name and not info.name.endswith("__main__")
    ]


def test_every_exception_accord_defines_is_an_accord_error() -> None:
    outside: list[str] = []
    for name in accord_modules():
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(value, BaseException)
                and value.__module__ == name
                and not issubclass(value, AccordError)
            ):
                outside.append(f"{name}.{value.__qualname__}")
    assert outside == []


def test_the_protocols_errors_and_a_refused_setting_are_accord_errors() -> None:
    from accord.config import ConfigError
    from accord.wire._errors import A2AError

    assert issubclass(A2AError, AccordError) and issubclass(ConfigError, ValueError)
