"""Durable delivery: the durable-worker building block, and push notifications on it.

``DurableWorker`` drains an outbox of leased jobs (retries with backoff, bounded
concurrency, a doorbell and a poll, an injectable clock); push delivery and the harness's
channel delivery are its users. ``PushDispatcher`` drains each config's outbox (the task's
log after the config's cursor) to its webhook; ``Guard`` decides which URLs and addresses
may be posted to. See docs/push.md.
"""

from accord.push._delivery import (
    CONTENT_TYPE,
    EVENT_ID_HEADER,
    TOKEN_HEADER,
    DeliveryError,
    Sender,
    pinned_url,
)
from accord.push._dispatcher import PushDispatcher, PushSettings, event_id
from accord.push._headers import check_config, scrub
from accord.push._ssrf import (
    AddressPolicy,
    Guard,
    IPAddress,
    RefusedTarget,
    Resolver,
    Target,
    loggable_origin,
    parse_target,
    system_resolver,
)
from accord.push._worker import (
    DurableWorker,
    Failure,
    Jobs,
    Scope,
    WorkerSettings,
    backoff_s,
    now_ms,
)

__all__ = [
    "CONTENT_TYPE",
    "EVENT_ID_HEADER",
    "TOKEN_HEADER",
    "AddressPolicy",
    "DeliveryError",
    "DurableWorker",
    "Failure",
    "Guard",
    "IPAddress",
    "Jobs",
    "PushDispatcher",
    "PushSettings",
    "RefusedTarget",
    "Resolver",
    "Scope",
    "Sender",
    "Target",
    "WorkerSettings",
    "backoff_s",
    "check_config",
    "event_id",
    "loggable_origin",
    "now_ms",
    "parse_target",
    "pinned_url",
    "scrub",
    "system_resolver",
]
