"""Fitting a conversation into the model's context: where to cut, so that what comes before the
cut is summarised and what comes after is kept as it is.

A tool call and its results are never separated: a cut never falls just before a tool result
(its call is earlier), so a model never sees a result without its call or a call without its
answers. The newest item is always kept. Pure: sizes in (tokens, estimated by the caller), an
index out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CHARS_PER_TOKEN = 4  # a rough estimate, on the side of caution for English text


def estimate_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


@dataclass(frozen=True, slots=True)
class Item:
    """One thing the model would read: its size in tokens, and whether it is a tool's
    result (which must stay with the call before it)."""

    tokens: int
    tool_result: bool = False


def cut(items: Sequence[Item], budget: int, reserve: int = 0) -> int:
    """The index of the first item to keep verbatim: 0 when everything fits in ``budget``
    (with ``reserve`` tokens left for the summary of what is cut); otherwise the earliest
    allowed cut after which the rest fits, or, when nothing does, the latest allowed cut that
    still keeps the newest item."""
    total = sum(item.tokens for item in items)
    if total <= budget or not items:
        return 0
    allowed = [i for i in range(1, len(items)) if not items[i].tool_result]
    kept = total
    previous = 0
    for index in allowed:
        kept -= sum(item.tokens for item in items[previous:index])
        previous = index
        if kept + reserve <= budget:
            return index
    return allowed[-1] if allowed else 0
