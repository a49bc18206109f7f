"""Push configs as the dashboard shows them: where each webhook stands in its delivery
(accord.service._reads.webhooks reads them).

A config's secrets (its token, its authentication credentials) are never shown: the page
says whether there is one, and the authentication scheme. ``last_error`` is the outbox's
own record of the latest failure, which push delivery keeps free of secrets.
"""

from __future__ import annotations

from typing import Any

from accord.service import Webhook
from accord.wire import UNSET, format_timestamp


def webhook_row(webhook: Webhook) -> dict[str, Any]:
    wire = webhook.config.config
    authentication = wire.authentication
    shown: dict[str, Any] = {
        "taskId": wire.task_id,
        "id": wire.id,
        "url": wire.url,
        "hasToken": bool(wire.token),
        "authScheme": authentication.scheme if authentication is not UNSET else "",
        "created": format_timestamp(webhook.config.created_ms),
    }
    delivery = webhook.delivery
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
