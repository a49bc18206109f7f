"""Naming the field that holds JSON nested past a recursive parser's limit."""

from __future__ import annotations

import json

import pytest

from accord.wire._nesting import deep_path, too_deep_field

DEEP = "[" * 1100 + "]" * 1100


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ('{"id": "t", "status_message": {"metadata": {"a": %s}}}', "status_message.metadata"),
        ('{"message": {"parts": [{"text": "x"}, {"data": %s}]}}', "message.parts[1].data"),
        ('{"task_id": "t", "authentication": %s}', "authentication"),
        ('{"authentication": {"scheme": %s}}', "authentication.scheme"),
        ("%s", ""),  # nothing to name: the body itself
    ],
)
def test_the_field_holding_the_deep_value_is_named(document: str, field: str) -> None:
    assert too_deep_field((document % DEEP).encode()) == field


def test_brackets_and_quotes_inside_strings_are_not_structure() -> None:
    tricky = json.dumps({"note": '[[[ "{ ]", \\" [', "metadata": {"k": "]]]"}})
    assert deep_path(tricky.encode(), limit=2) is None
    deep = json.dumps({"note": "[[[[", "metadata": {"k": [[["x"]]]}})
    assert deep_path(deep.encode(), limit=3) == ["metadata", "k", 0, 0]


def test_a_document_within_the_limit_has_no_deep_path() -> None:
    assert deep_path(b'{"a": [[1, 2], {"b": []}]}', limit=4) is None
    assert deep_path(b'{"a": [[1, 2], {"b": []}]}', limit=3) == ["a", 1, "b", 0]
    assert too_deep_field(b"not json at all [[[") == ""
