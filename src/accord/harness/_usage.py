"""Tokens a task's model calls took, each call counted once.

The message that ends a stretch of a turn — its answer, the help request that parks it, the
status of a turn that goes on with messages that joined it — carries the tokens of the model
calls made since the stretch began, in its metadata (``accord.harness/usage``):
``input_tokens``, ``output_tokens`` and ``cached_tokens`` (their sums), and ``calls``, each
call by its id (``<turn>#<step>``, the id its journal entry has; ``<turn>#<step>/summary``
for the call that summarised the conversation before that step) with its own ``[input,
output, cached]``. A turn that resumes from its journal after a crash replays
answered calls under the same ids, so the task's totals (:func:`totals`) count every call
once, however many messages name it; :func:`last_turn` counts the last turn's the same way
(``/status`` shows both).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accord.harness.core._state import ACCORD_PREFIX
from accord.harness.models import Usage
from accord.wire import Task

USAGE_KEY = ACCORD_PREFIX + "usage"


def call_id(turn: str, step: int) -> str:
    """A model call's id: its turn's key and its step (its journal entry's)."""
    return f"{turn}#{step}"


def summary_id(turn: str, step: int) -> str:
    """The id of the model call that summarised the conversation before step ``step``
    (compaction, accord.harness._compacting)."""
    return f"{call_id(turn, step)}/summary"


def metadata_of(calls: Mapping[str, Usage]) -> dict[str, Any]:
    """What a message carries for ``calls`` (their sums, and each by its id)."""
    total = sum(calls.values(), Usage())
    return {
        "input_tokens": total.input_tokens,
        "output_tokens": total.output_tokens,
        "cached_tokens": total.cached_tokens,
        "calls": {
            name: [used.input_tokens, used.output_tokens, used.cached_tokens]
            for name, used in calls.items()
        },
    }


def calls_of(metadata: object) -> dict[str, Usage]:
    """The model calls a message's metadata names (:data:`USAGE_KEY`), each by its id with
    its tokens (empty: it names none; entries that are not ``[input, output, cached]``
    integers are left out — a client reads this from the network)."""
    found = metadata.get(USAGE_KEY) if isinstance(metadata, dict) else None
    calls = found.get("calls") if isinstance(found, dict) else None
    if not isinstance(calls, dict):
        return {}
    return {
        name: Usage(*used)
        for name, used in calls.items()
        if isinstance(name, str)
        and isinstance(used, list)
        and len(used) == 3
        and all(type(n) is int and n >= 0 for n in used)
    }


def totals(task: Task) -> Usage:
    """The tokens every model call of ``task`` took, each call once."""
    calls, unnamed = _calls(task)
    return sum(calls.values(), unnamed)


def last_turn(task: Task) -> Usage | None:
    """The tokens the model calls of ``task``'s last turn took (the turn of the last call
    its history names), each call once; None: no call named yet."""
    calls, _ = _calls(task)
    if not calls:
        return None
    turn = turn_of(next(reversed(calls)))
    return sum((used for name, used in calls.items() if turn_of(name) == turn), Usage())


def turn_of(name: str) -> str:
    """The turn's key of a call's id (``<turn>#<step>``, ``<turn>#<step>/summary``)."""
    return name.rpartition("#")[0]


def _calls(task: Task) -> tuple[dict[str, Usage], Usage]:
    """Each named call of ``task`` once, in the order its history first names them; and
    the sums of the messages of before calls were named."""
    named: dict[str, Usage] = {}
    unnamed = Usage()
    for message in task.history:
        metadata = message.metadata
        found = metadata.get(USAGE_KEY) if isinstance(metadata, dict) else None
        if not isinstance(found, dict):
            continue
        if not isinstance(found.get("calls"), dict):  # (a message of before calls were named)
            unnamed = unnamed + _usage(found)
            continue
        for name, used in calls_of(metadata).items():
            named.setdefault(name, used)
    return named, unnamed


def _usage(found: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=int(found.get("input_tokens", 0)),
        output_tokens=int(found.get("output_tokens", 0)),
        cached_tokens=int(found.get("cached_tokens", 0)),
    )
