"""Durable delivery: the durable-worker building block, and push notifications on it.

``DurableWorker`` drains an outbox of leased jobs (retries with backoff, bounded
concurrency, a doorbell and a poll, an injectable clock); push delivery and the harness's
channel delivery are its users. ``PushDispatcher`` drains each config's outbox (the task's
log after the config's cursor) to its webhook; ``Guard`` decides which URLs and addresses
may be posted to. See docs/push.md.
"""

from accord.push._delivery import CONTENT_TYPE, EVENT_ID_HEADER, TOKEN_HEADER, DeliveryError, Sender
from accord.push._dispatcher import PushDispatcher, PushSettings, event_id
from accord.push._ssrf import AddressPolicy, Guard, RefusedTarget, Resolver, system_resolver
from accord.push._worker import DurableWorker, Failure, Jobs, Scope, WorkerSettings, backoff_s

__all__ = [
    "CONTENT_TYPE",
    "EVENT_ID_HEADER",
    "TOKEN_HEADER",
    "AddressPolicy",
    "DeliveryError",
    "DurableWorker",
    "Failure",
    "Guard",
    "Jobs",
    "PushDispatcher",
    "PushSettings",
    "RefusedTarget",
    "Resolver",
    "Scope",
    "Sender",
    "WorkerSettings",
    "backoff_s",
    "event_id",
    "system_resolver",
]
