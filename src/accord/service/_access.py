"""Who may read what: the one set of access rules every read applies, the A2A operations'
and the dashboard's alike.

- **The tenant.** A caller acts in its own tenant. An anonymous caller may name another (the
  HTTP+JSON path prefix, the request's ``tenant`` field); an authenticated one may not
  (PERMISSION_DENIED): its tenant came with its credentials, "" included.
- **The grants** of the one table (accord.core._grants). The A2A operations are granted by
  their bindings, one row each; a read of :mod:`accord.service._reads` needs any one of the
  rows :data:`READ_GRANTS` lists for it: the A2A read a client makes, or the Agent actor's
  read of the whole tenant (the feed, the ``AllTasks`` view).
- **The agent's access check** (``Intake.access``, the harness's membership boundary): within
  the tenant, a caller sees the tasks the agent lets it read, as GetTask and ListTasks apply
  it; the Agent actor reads the whole tenant, as the feed gives it.

Another tenant's task, and a task the agent hides from the caller, are "not found", like an
unknown id: no read tells a caller what exists beyond what it may see.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from accord.core import AGENT_ACTOR, Caller, granted
from accord.engine import Engine
from accord.wire import A2AError, ErrorKind, Task

# What each read needs: any one of these grants (a client's read, or the Agent actor's read
# of the whole tenant).
READ_GRANTS: dict[str, tuple[str, ...]] = {
    "tasks": ("a2a.tasks.ListTasks", "a2a.tasks.AllTasks"),
    "task": ("a2a.tasks.GetTask", "accord.remote.Feed"),
    "push": ("a2a.tasks.ListTaskPushNotificationConfigs", "a2a.tasks.PushNotificationConfigs"),
    "health": ("a2a.tasks.ListTasks", "a2a.tasks.AllTasks"),
}


def in_tenant(caller: Caller, tenant: str | None) -> Caller:
    """``caller`` acting in ``tenant`` (None or "": its own); PERMISSION_DENIED for an
    authenticated caller naming another tenant."""
    if not tenant or tenant == caller.tenant:
        return caller
    if caller.authenticated:  # its tenant came with its credentials, "" included
        raise A2AError(
            ErrorKind.PERMISSION_DENIED, "the request names a tenant the caller does not belong to"
        )
    return dataclasses.replace(caller, tenant=tenant)


@dataclass(frozen=True, slots=True)
class Reader:
    """One caller reading in its tenant: what it is granted, and which tasks it sees."""

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

    def require(self, read: str) -> None:
        """PERMISSION_DENIED unless the caller holds one of the grants ``read`` needs."""
        if not self.may(read):
            needs = " or ".join(READ_GRANTS[read])
            raise A2AError(
                ErrorKind.PERMISSION_DENIED, f"not granted: reading {read} needs {needs}"
            )

    def sees(self, task: Task) -> bool:
        """Whether the caller may read ``task`` (of its tenant), as GetTask would let it."""
        return self.sees_whole_tenant or self.engine.allows("read", task, self.caller)


def reader(engine: Engine, caller: Caller, tenant: str | None = None) -> Reader:
    """``caller`` reading in ``tenant`` (None: its own), the tenant rule applied."""
    return Reader(in_tenant(caller, tenant), engine)
