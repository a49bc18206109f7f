"""Push notifications: the durable outbox, delivery with retries, the SSRF guard.

``PushDispatcher`` drains each config's outbox (the task's log after the config's cursor) to
its webhook; ``Guard`` decides which URLs and addresses may be posted to. See docs/push.md.
"""

from accord.push.delivery import CONTENT_TYPE, EVENT_ID_HEADER, TOKEN_HEADER, DeliveryError, Sender
from accord.push.dispatcher import PushDispatcher, PushSettings, event_id
from accord.push.ssrf import AddressPolicy, Guard, RefusedTarget, Resolver, system_resolver

__all__ = [
    "CONTENT_TYPE",
    "EVENT_ID_HEADER",
    "TOKEN_HEADER",
    "AddressPolicy",
    "DeliveryError",
    "Guard",
    "PushDispatcher",
    "PushSettings",
    "RefusedTarget",
    "Resolver",
    "Sender",
    "event_id",
    "system_resolver",
]
