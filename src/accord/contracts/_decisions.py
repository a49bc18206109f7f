"""The last enforcement decisions of each contract, kept in memory by the node that made them:
what the operators' API shows beside a contract's record (``decisions``), and the dashboard
on a task's page. Bounded twice — DECISIONS_KEPT per contract, CONTRACTS_KEPT contracts (the
least recently judged forgotten first) — and gone at a restart: a view of what happened
lately, not a record (refusals are also logged, and admissions leave the message itself in
the task's history).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any, Literal

from accord.wire import format_timestamp

DECISIONS_KEPT = 20  # per contract
CONTRACTS_KEPT = 1000

Outcome = Literal["admitted", "parked", "refused"]


@dataclass(frozen=True, slots=True)
class Decision:
    at_ms: int
    outcome: Outcome
    task_id: str | None  # (a refused message to a new task has none)
    sender: str | None
    action: str | None
    code: str = ""  # the refusal's reason code
    reason: str = ""

    def as_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"at": format_timestamp(self.at_ms), "outcome": self.outcome}
        for name, value in (
            ("taskId", self.task_id),
            ("sender", self.sender),
            ("action", self.action),
            ("code", self.code),
            ("reason", self.reason),
        ):
            if value:
                shown[name] = value
        return shown


class Decisions:
    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, str], deque[Decision]] = OrderedDict()

    def note(self, tenant: str, interaction_id: str, decision: Decision) -> None:
        key = (tenant, interaction_id)
        found = self._kept.get(key)
        if found is None:
            found = self._kept[key] = deque(maxlen=DECISIONS_KEPT)
            while len(self._kept) > CONTRACTS_KEPT:
                self._kept.popitem(last=False)
        else:
            self._kept.move_to_end(key)
        found.append(decision)

    def last(self, tenant: str, interaction_id: str) -> list[Decision]:
        """The contract's decisions kept here, newest first."""
        return list(reversed(self._kept.get((tenant, interaction_id), ())))
