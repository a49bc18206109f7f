"""The A2A service: the eleven operations once for every binding (JSON-RPC, HTTP+JSON, gRPC,
the command surface), the reads beside them that the dashboard makes (a task, the table's
pages and search, a task's timeline, the tasks that change, webhooks, health), the one set of
access rules both apply (tenant, grants, the agent's access check), the feed reader the
command surface and the dashboard share, the bounds on what a request may carry, and the
agent card built from the settings.

- ``operations``: the A2A operations and :class:`~accord.service._operations.Service`;
- ``access``: who may read what (the tenant rule, the reads' grants, the agent's check);
- ``reads``, ``search``, ``status``: the dashboard's reads;
- ``feed``: reading the store's feed as it grows (``FeedHub`` wakes the readers);
- ``bounds``, ``card``: request bounds, the agent card;
- ``purge``: a task deleted now (the operators' purge);
- ``rate``: rate limits per caller, every binding's.
"""

from accord.service._access import Reader
from accord.service._bounds import Bounds
from accord.service._card import CardSettings, build_card
from accord.service._feed import FeedHub, batches
from accord.service._operations import OPERATIONS, Call, Operation, Service, negotiate, scoped
from accord.service._preview import Preview
from accord.service._purge import PURGE_GRANT, purge_task
from accord.service._rate import RATE_BUCKETS, RateLimiter
from accord.service._reads import Changes, Webhook
from accord.service._search import search
from accord.service._status import Backlog, Node, Recovery, checks, status

__all__ = [
    "OPERATIONS",
    "PURGE_GRANT",
    "RATE_BUCKETS",
    "Backlog",
    "Bounds",
    "Call",
    "CardSettings",
    "Changes",
    "FeedHub",
    "Node",
    "Operation",
    "Preview",
    "RateLimiter",
    "Reader",
    "Recovery",
    "Service",
    "Webhook",
    "batches",
    "build_card",
    "checks",
    "negotiate",
    "purge_task",
    "scoped",
    "search",
    "status",
]
