"""Where a JSON document is nested too deeply, found without a recursive parser.

msgspec (like every recursive parser) refuses JSON nested past its recursion limit with a
bare RecursionError that names no field. :func:`too_deep_field` scans the text iteratively,
with a regular expression over strings and structural characters, to name the field that
holds the deep value — for a validation error that tells the client what to fix.
"""

from __future__ import annotations

import re

import msgspec

# A string (escapes included) or one of the characters that give a value its place.
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\],:]', re.DOTALL)

# The free-form fields of the A2A model: the field to name is the one that opened the value.
FREE_FORM = frozenset({"metadata", "data"})

SCAN_BYTES = 256 * 1024  # give up past this: the scan costs Python work per token
LIMIT = 512  # well below any recursive parser's limit, far above any schema's own nesting

Step = str | int


def deep_path(data: bytes, limit: int = LIMIT, scan_bytes: int = SCAN_BYTES) -> list[Step] | None:
    """The path (object keys and array indexes) to the first container nested more than
    ``limit`` deep, or None if there is none in the first ``scan_bytes``."""
    path: list[Step] = []
    in_object: list[bool] = []
    want_key = False
    for match in _TOKENS.finditer(data, 0, min(len(data), scan_bytes)):
        token = match.group()
        first = token[0]
        if first == 0x22:  # a string: a key where one is expected, else a value
            if want_key and in_object:
                path[-1] = _key(token)
                want_key = False
        elif first in (0x7B, 0x5B):  # { [
            in_object.append(first == 0x7B)
            path.append("" if first == 0x7B else 0)
            want_key = first == 0x7B
            if len(in_object) > limit:
                return path
        elif first in (0x7D, 0x5D):  # } ]
            if in_object:
                in_object.pop()
                path.pop()
            want_key = False
        elif first == 0x2C and in_object:  # ,
            if in_object[-1]:
                want_key = True
            else:
                index = path[-1]
                path[-1] = index + 1 if isinstance(index, int) else 0
    return None


def _key(token: bytes) -> str:
    try:
        key = msgspec.json.decode(token)
    except msgspec.DecodeError:
        return "?"
    return key if isinstance(key, str) else "?"


def field_name(path: list[Step]) -> str:
    """The field a client would fix: the path down to the first free-form field on it
    (``status_message.metadata``), else down to its last object key among the first few
    steps (``authentication.scheme``)."""
    shown: list[Step] = []
    last_key = 0
    for step in path[:8]:
        shown.append(step)
        if isinstance(step, str):
            last_key = len(shown)
            if step in FREE_FORM:
                break
    else:
        shown = shown[:last_key]
    text = ""
    for step in shown:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text


def too_deep_field(data: bytes) -> str:
    """The field holding JSON nested too deeply ("" when the scan cannot tell)."""
    path = deep_path(data)
    return field_name(path) if path is not None else ""
