"""Who may invoke what: the one table of grants, checked by every binding (JSON-RPC,
HTTP+JSON, gRPC and the command surface) before an operation reads its input.

Keys are qualified command names, the seed's ``operationId``s: an A2A operation such as
``SendMessage`` is ``a2a.tasks.SendMessage`` on every binding, the same command the surface
serves at ``/tasks/commands/message:send``. The seed declares the same grants
(``x-ess-may-invoke`` and ``x-ess-may-read``); a test keeps the two in step.

A name missing from the table is granted to nobody: an operation added without a row is
refused on every binding, never left open.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from accord.core._caller import (
    ADMIN_ACTOR,
    AGENT_ACTOR,
    CLIENT_ACTOR,
    CONTRACT_OPERATOR_ACTOR,
    DISCOVERY_ACTOR,
    Caller,
)

GRANTS: Mapping[str, str] = MappingProxyType(
    {
        # The A2A operations (JSON-RPC, HTTP+JSON, gRPC; the surface's commands of the
        # same name): a client's.
        "a2a.tasks.SendMessage": CLIENT_ACTOR,
        "a2a.tasks.SendStreamingMessage": CLIENT_ACTOR,
        "a2a.tasks.GetTask": CLIENT_ACTOR,
        "a2a.tasks.ListTasks": CLIENT_ACTOR,
        "a2a.tasks.CancelTask": CLIENT_ACTOR,
        "a2a.tasks.SubscribeToTask": CLIENT_ACTOR,
        "a2a.tasks.CreateTaskPushNotificationConfig": CLIENT_ACTOR,
        "a2a.tasks.GetTaskPushNotificationConfig": CLIENT_ACTOR,
        "a2a.tasks.ListTaskPushNotificationConfigs": CLIENT_ACTOR,
        "a2a.tasks.DeleteTaskPushNotificationConfig": CLIENT_ACTOR,
        "a2a.discovery.GetExtendedAgentCard": DISCOVERY_ACTOR,
        # The surface's agent-side commands: what a remote worker does to a task.
        "a2a.tasks.StartWorking": AGENT_ACTOR,
        "a2a.tasks.CompleteTask": AGENT_ACTOR,
        "a2a.tasks.FailTask": AGENT_ACTOR,
        "a2a.tasks.RejectTask": AGENT_ACTOR,
        "a2a.tasks.RequireInput": AGENT_ACTOR,
        "a2a.tasks.RequireAuth": AGENT_ACTOR,
        "a2a.tasks.UpdateArtifact": AGENT_ACTOR,
        # The surface's views.
        "a2a.tasks.Tasks": CLIENT_ACTOR,
        "a2a.tasks.TaskPushNotificationConfigs": CLIENT_ACTOR,
        "a2a.tasks.AllTasks": AGENT_ACTOR,
        "a2a.tasks.PushNotificationConfigs": AGENT_ACTOR,
        # accord's endpoints for remote workers (docs/remote-agents.md).
        "accord.remote.Feed": AGENT_ACTOR,  # GET /tasks/events
        "accord.remote.Claim": AGENT_ACTOR,  # POST /tasks/claims
        # accord's interaction contracts: the operators' API under /contracts
        # (docs/contracts.md), reads and moves alike.
        "accord.contracts.Operate": CONTRACT_OPERATOR_ACTOR,
        # accord's operators' API (docs/server.md, "Retention"): a task purged now.
        "accord.admin.PurgeTask": ADMIN_ACTOR,
    }
)


def required_actor(command: str) -> str | None:
    """The actor ``command`` needs; None for a command nobody may invoke."""
    return GRANTS.get(command)


def granted(caller: Caller, command: str) -> bool:
    actor = GRANTS.get(command)
    return actor is not None and actor in caller.actors
