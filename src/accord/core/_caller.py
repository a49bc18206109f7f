"""Who is asking: the identity authentication established, never a field of the request."""

from __future__ import annotations

from dataclasses import dataclass, field

CLIENT_ACTOR = "a2a.tasks.Client"
AGENT_ACTOR = "a2a.tasks.Agent"
DISCOVERY_ACTOR = "a2a.discovery.Client"
# A person running this agent's interaction contracts (docs/contracts.md).
CONTRACT_OPERATOR_ACTOR = "accord.contracts.Operator"
# A person operating this server: purges tasks now (docs/server.md, "Retention").
ADMIN_ACTOR = "accord.admin.Operator"


@dataclass(frozen=True, slots=True)
class Caller:
    identity: str = "anonymous"
    tenant: str = ""
    actors: frozenset[str] = field(
        default_factory=lambda: frozenset({CLIENT_ACTOR, DISCOVERY_ACTOR})
    )
    authenticated: bool = False
    # The participant id the request asserts (the X-Participant-Id header), "" for none. It
    # is who the caller is only where nothing authenticates (open mode); with authentication
    # the harness refuses a request whose assertion differs from ``identity``.
    participant: str = ""

    def may(self, actor: str) -> bool:
        return actor in self.actors


ANONYMOUS = Caller()
# With no credentials configured (open mode, loopback only), a request may act as every actor.
OPEN = Caller(
    identity="anonymous",
    actors=frozenset(
        {CLIENT_ACTOR, AGENT_ACTOR, DISCOVERY_ACTOR, CONTRACT_OPERATOR_ACTOR, ADMIN_ACTOR}
    ),
)
