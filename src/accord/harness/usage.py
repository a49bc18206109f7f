"""Tokens a task's model calls took. Each turn's answer carries its turn's in its metadata
(``accord.harness/usage``: ``input_tokens``, ``output_tokens``, ``cached_tokens``); the
task's totals are the sum over its history."""

from __future__ import annotations

from accord.harness.core.state import ACCORD_PREFIX
from accord.harness.models import Usage
from accord.wire.model import Task

USAGE_KEY = ACCORD_PREFIX + "usage"


def totals(task: Task) -> Usage:
    """The tokens every turn of ``task`` took, added up."""
    total = Usage()
    for message in task.history:
        metadata = message.metadata
        found = metadata.get(USAGE_KEY) if isinstance(metadata, dict) else None
        if isinstance(found, dict):
            total = total + Usage(
                input_tokens=int(found.get("input_tokens", 0)),
                output_tokens=int(found.get("output_tokens", 0)),
                cached_tokens=int(found.get("cached_tokens", 0)),
            )
    return total
