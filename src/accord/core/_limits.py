"""Configurable limits the core enforces; ``None`` means unlimited."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    tasks_per_tenant: int | None = None
    messages_per_task: int | None = 1000
    push_configs_per_task: int | None = 10
