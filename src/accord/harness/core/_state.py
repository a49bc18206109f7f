"""The harness state of a task, read from (and written into) its metadata.

Nothing of it lives anywhere else: the task extension under ``TASK_KEY`` (participants and
roles, lifecycle, model, plan, sub-tasks …) and the status extension's sub-state under
``STATUS_KEY``, both in ``Task.metadata``, which the task's event log carries. A restart, or
another node, reads the same state back from the task.
"""

from __future__ import annotations

from typing import Any

import msgspec

from accord.harness._wire import (
    KEY_PREFIX,
    STATUS_KEY,
    TASK_KEY,
    TaskExtension,
    extension_dict,
)
from accord.wire import UNSET, Task


def extension_of(task: Task) -> TaskExtension | None:
    """The task's extension; None for a task the harness does not manage."""
    metadata = task.metadata
    if metadata is UNSET or TASK_KEY not in metadata:
        return None
    raw = metadata[TASK_KEY]
    known = _decoded.get(id(raw))
    if known is not None and known[0] is raw:
        return known[1]
    extension = msgspec.convert(raw, TaskExtension)
    if len(_decoded) >= DECODED:
        del _decoded[next(iter(_decoded))]
    _decoded[id(raw)] = (raw, extension)
    return extension


# The extensions last decoded, by the identity of their metadata value: a turn reads its
# task's extension some eight times (intake, its rules, the conversation, parking …) from
# one value, which tasks carry from event to event and nothing changes in place (a new
# extension is a new value: metadata_with). TaskExtension is frozen, so one decoding is
# shared; each entry holds its value, so an id is not reused while it is here. Oldest first.
DECODED = 256
_decoded: dict[int, tuple[Any, TaskExtension]] = {}


def sub_state_of(task: Task) -> str | None:
    """Why the task is INPUT_REQUIRED, as the status extension says (None: it says nothing).
    The value is open: an unknown one means plain INPUT_REQUIRED."""
    metadata = task.metadata
    if metadata is UNSET:
        return None
    value = metadata.get(STATUS_KEY)
    if isinstance(value, dict) and isinstance(value.get("sub_state"), str):
        return str(value["sub_state"])
    return None


def metadata_with(base: dict[str, Any] | None, extension: TaskExtension) -> dict[str, Any]:
    """``base`` (a task's metadata) with ``extension`` in it."""
    return {**(base or {}), TASK_KEY: extension_dict(extension)}


# accord's own keys in task and message metadata (``accord.harness/model_call`` …).
ACCORD_PREFIX = "accord.harness/"
# What ``message.received`` hooks decided about participants' messages, in Task.metadata:
# {"refused": [message ids], "replaced": {message id: the message the model sees instead}},
# durable before any model call. A refusal's note (message metadata {RECEIVED_KEY:
# {"refused": message id}}) is not shown to the model either.
RECEIVED_KEY = ACCORD_PREFIX + "received"
# The status message of a turn a model's failure ended (message metadata {"reason": …,
# "model": …}): the participants read it, no model does (accord.harness.core._failure).
MODEL_FAILURE_KEY = ACCORD_PREFIX + "model_failure"


def without_harness_keys(metadata: Any) -> dict[str, Any]:
    """A client's metadata for a new task, with every key of the harness's namespaces taken
    out: only the harness writes those (a forged extension would make its sender admin, a
    forged hook record would change what the model sees)."""
    if not isinstance(metadata, dict):
        return {}
    return {k: v for k, v in metadata.items() if not k.startswith((KEY_PREFIX, ACCORD_PREFIX))}
