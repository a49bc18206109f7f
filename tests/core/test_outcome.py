"""Outcome's own copies (the engine's send path builds them instead of dataclasses.replace)."""

from __future__ import annotations

import dataclasses
from typing import Any

from accord.core import Outcome


def _every_field_set() -> tuple[Outcome, dict[str, Any]]:
    values: dict[str, Any] = {f.name: [object()] for f in dataclasses.fields(Outcome)}
    return Outcome(**values), values


def test_carrying_keeps_every_other_field() -> None:
    outcome, values = _every_field_set()
    keys: list[Any] = [object()]
    carried = outcome.carrying(keys)
    assert carried == dataclasses.replace(outcome, requests=keys)
    assert carried.requests is keys
    for name, value in values.items():
        if name != "requests":
            assert getattr(carried, name) is value, name


def test_after_puts_the_earlier_lists_first_and_keeps_every_other_field() -> None:
    outcome, values = _every_field_set()
    earlier, _ = _every_field_set()
    joined = outcome.after(earlier)
    lists = ("events", "published", "requests")
    assert joined == dataclasses.replace(
        outcome, **{name: [*getattr(earlier, name), *values[name]] for name in lists}
    )
    for name, value in values.items():
        if name not in lists:
            assert getattr(joined, name) is value, name
