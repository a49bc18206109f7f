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
