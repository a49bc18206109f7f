"""Who is asking: the identity authentication established, never a field of the request."""

from __future__ import annotations

from dataclasses import dataclass, field

CLIENT_ACTOR = "a2a.tasks.Client"
AGENT_ACTOR = "a2a.tasks.Agent"
DISCOVERY_ACTOR = "a2a.discovery.Client"


@dataclass(frozen=True, slots=True)
class Caller:
    identity: str = "anonymous"
    tenant: str = ""
    actors: frozenset[str] = field(
        default_factory=lambda: frozenset({CLIENT_ACTOR, DISCOVERY_ACTOR})
    )
    authenticated: bool = False

    def may(self, actor: str) -> bool:
        return actor in self.actors


ANONYMOUS = Caller()
# With no credentials configured (open mode, loopback only), a request may act as every actor.
OPEN = Caller(identity="anonymous", actors=frozenset({CLIENT_ACTOR, AGENT_ACTOR, DISCOVERY_ACTOR}))
