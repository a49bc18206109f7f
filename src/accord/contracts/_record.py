"""A contract as one agent keeps it: the interaction document (exactly the schema's), which
party this agent is, and what the document has no field for — who completed, how it ended,
which parked tasks a person approved, which notices the other agent is still owed.

Records are immutable: every move of the lifecycle returns a new one with ``version`` one
higher, and the store writes it only over the version it was decided from (compare-and-swap).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from accord.wire import parse_timestamp

TERMINAL = frozenset({"rejected", "expired", "cancelled", "completed"})
LIVE = frozenset({"pending", "active"})


@dataclass(frozen=True, slots=True)
class Ending:
    """How a contract left pending/active: by whom (an agent id, or ``clock``), when, why."""

    status: str
    by: str
    at: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Approval:
    """A person's approval of ``action`` on the parked task ``task_id``."""

    task_id: str
    action: str
    by: str
    at: str


@dataclass(frozen=True, slots=True)
class Event:
    """One move, as the contract's log keeps it."""

    version: int
    kind: str
    at_ms: int
    actor: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ContractRecord:
    tenant: str
    document: dict[str, Any]
    local_agent: str
    version: int = 1
    completions: dict[str, str] = field(default_factory=dict)  # agent id -> when
    ending: Ending | None = None
    approvals: tuple[Approval, ...] = ()
    outbox: tuple[str, ...] = ()  # notices to deliver to the other agent, oldest first

    # --- what the document says ----------------------------------------------------------

    @property
    def interaction_id(self) -> str:
        return str(self.document["interactionId"])

    @property
    def status(self) -> str:
        return str(self.document["status"])

    @property
    def terms(self) -> dict[str, Any]:
        terms: dict[str, Any] = self.document["contract"]
        return terms

    @property
    def terms_hash(self) -> str:
        return str(self.document["termsHash"])

    @property
    def initiator(self) -> str:
        return str(self.document["initiatorAgentId"])

    @property
    def responder(self) -> str:
        return str(self.document["responderAgentId"])

    @property
    def counterparty(self) -> str:
        return self.responder if self.local_agent == self.initiator else self.initiator

    @property
    def local_role(self) -> str:
        return "initiator" if self.local_agent == self.initiator else "responder"

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def created_ms(self) -> int:
        return parse_timestamp(self.document["createdAt"])

    @property
    def expires_ms(self) -> int:
        """When it expires: ``expiresAt``, or the terms' ``deadline`` when that is earlier."""
        expires = parse_timestamp(self.document["expiresAt"])
        deadline = self.terms.get("deadline")
        if deadline is not None:
            expires = min(expires, parse_timestamp(deadline))
        return expires

    def peer_endpoint(self) -> str | None:
        """Where the other agent takes A2A messages (its transport in the document)."""
        name = "responderTransport" if self.local_role == "initiator" else "initiatorTransport"
        transport = self.document.get(name)
        return str(transport["endpoint"]) if transport else None

    def approved(self, task_id: str, action: str) -> bool:
        return any(a.task_id == task_id and a.action == action for a in self.approvals)

    def replace(self, **changes: Any) -> ContractRecord:
        return dataclasses.replace(self, **changes)

    # --- storage form ----------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """What the store keeps beside the document (JSON)."""
        out: dict[str, Any] = {"localAgent": self.local_agent}
        if self.completions:
            out["completions"] = dict(self.completions)
        if self.ending is not None:
            out["ending"] = dataclasses.asdict(self.ending)
        if self.approvals:
            out["approvals"] = [
                {"taskId": a.task_id, "action": a.action, "by": a.by, "at": a.at}
                for a in self.approvals
            ]
        if self.outbox:
            out["outbox"] = list(self.outbox)
        return out

    def as_json(self) -> dict[str, Any]:
        """The record as the operators' API shows it: the document and accord's state."""
        return {"interaction": self.document, "version": self.version, **self.state()}

    @classmethod
    def from_stored(
        cls, tenant: str, version: int, document: dict[str, Any], state: dict[str, Any]
    ) -> ContractRecord:
        ending = state.get("ending")
        return cls(
            tenant=tenant,
            document=document,
            local_agent=str(state["localAgent"]),
            version=version,
            completions=dict(state.get("completions", {})),
            ending=Ending(**ending) if ending else None,
            approvals=tuple(
                Approval(task_id=a["taskId"], action=a["action"], by=a["by"], at=a["at"])
                for a in state.get("approvals", ())
            ),
            outbox=tuple(state.get("outbox", ())),
        )
