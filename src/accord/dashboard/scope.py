"""Who the dashboard shows what: the caller the API would see, in the tenant the API would
use, and the tasks the API would let it read.

The dashboard's reads answer exactly what the API answers the same credentials:

- the caller comes from the same authenticator (401 without valid credentials, when they
  are required); open mode (no credentials configured) holds every actor;
- the tenant is the caller's own; an anonymous caller may name another with ``tenant``
  (the HTTP+JSON path prefix does the same), an authenticated one may not (403);
- every read needs a grant of the one table (accord.core.grants): the A2A read a client
  makes, or the Agent actor's read of the whole tenant (the feed, the ``allTasks`` view);
- within the tenant, a caller without the Agent actor sees the tasks the agent's access
  check lets it read (the harness's membership boundary, as GetTask and ListTasks apply
  it); the Agent actor reads the whole tenant, as the feed gives it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from accord.core.caller import AGENT_ACTOR, Caller
from accord.core.grants import granted
from accord.engine import Engine
from accord.wire.errors import A2AError, ErrorKind
from accord.wire.model import Task

# What each dashboard read needs: any one of these grants (a client's read, or the Agent
# actor's read of the whole tenant).
READ_GRANTS: dict[str, tuple[str, ...]] = {
    "tasks": ("a2a.tasks.ListTasks", "a2a.tasks.AllTasks"),
    "task": ("a2a.tasks.GetTask", "accord.remote.Feed"),
    "push": ("a2a.tasks.ListTaskPushNotificationConfigs", "a2a.tasks.PushNotificationConfigs"),
    "health": ("a2a.tasks.ListTasks", "a2a.tasks.AllTasks"),
}


@dataclass(frozen=True, slots=True)
class Viewer:
    """One dashboard request's caller, acting in its tenant."""

    caller: Caller
    engine: Engine  # whose agent's access check decides what a client sees

    @property
    def tenant(self) -> str:
        return self.caller.tenant

    @property
    def sees_whole_tenant(self) -> bool:
        return not self.engine.checks_access or self.caller.may(AGENT_ACTOR)

    def may(self, read: str) -> bool:
        return any(granted(self.caller, name) for name in READ_GRANTS[read])

    def sees(self, task: Task) -> bool:
        """Whether the API would let this caller read ``task`` (of its tenant)."""
        return self.sees_whole_tenant or self.engine.allows("read", task, self.caller)


def in_tenant(caller: Caller, tenant: str | None) -> Caller:
    """``caller`` acting in ``tenant`` (None or "": its own), as the HTTP+JSON path prefix
    would have it; PERMISSION_DENIED for an authenticated caller naming another tenant."""
    if not tenant or tenant == caller.tenant:
        return caller
    if caller.authenticated:
        raise A2AError(
            ErrorKind.PERMISSION_DENIED, "the request names a tenant the caller does not belong to"
        )
    return dataclasses.replace(caller, tenant=tenant)
