"""Push configs as the dashboard shows them: where each webhook stands in its delivery.

A config's secrets (its token, its authentication credentials) are never shown: the page
says whether there is one, and the authentication scheme. ``last_error`` is the outbox's
own record of the latest failure, which push delivery keeps free of secrets.
"""

from __future__ import annotations

from typing import Any

from accord.core.records import PushConfigRecord
from accord.store.base import PushDelivery, TaskStore
from accord.wire.model import UNSET
from accord.wire.time import format_timestamp


def config_row(config: PushConfigRecord, delivery: PushDelivery | None) -> dict[str, Any]:
    wire = config.config
    authentication = wire.authentication
    shown: dict[str, Any] = {
        "taskId": wire.task_id,
        "id": wire.id,
        "url": wire.url,
        "hasToken": bool(wire.token),
        "authScheme": authentication.scheme if authentication is not UNSET else "",
        "created": format_timestamp(config.created_ms),
    }
    if delivery is not None:
        shown.update(
            state=delivery.state,
            deliveredThrough=delivery.cursor,
            taskSeq=delivery.task_seq,
            failures=delivery.failures,
            lastError=delivery.last_error,
            nextAttempt=format_timestamp(delivery.next_attempt_ms)
            if delivery.next_attempt_ms
            else "",
        )
    return shown


async def task_configs(store: TaskStore, task_id: str) -> list[dict[str, Any]]:
    """The task's push configs, oldest first, each with its delivery state."""
    rows = []
    for config in await store.list_push_configs(task_id):
        delivery = await store.get_push_delivery(task_id, config.config.id)
        rows.append(config_row(config, delivery))
    return rows
