"""Enforcement: may this message, sent under this contract, reach the agent?

A message under a contract is refused unless, in this order:

1. the contract exists here and its sender is authenticated as the other party
   (``contract_unknown``: to anyone else a contract that exists looks exactly like one that
   does not);
2. the reference it carries names the stored terms hash and parties (``contract_mismatch``);
3. the contract has not expired — ``expiresAt``, or the terms' ``deadline`` when earlier
   (``contract_expired``);
4. the contract is active (``contract_not_active``);
5. the action it asks for is named, allowed and not prohibited — prohibited wins, an empty
   allow-list allows nothing (``action_outside_contract``);
6. the data classes it declares are allowed and not prohibited (``prohibited_data``).

An allowed action listed in ``humanApprovalRequirements`` then parks the task until a person
of this agent approves it (:data:`PARK`), unless that task's action was approved already.
Matching is exact and case-sensitive, as OpenClasp's.
"""

from __future__ import annotations

from typing import Literal

from accord.contracts._errors import (
    ACTION_OUTSIDE_CONTRACT,
    CONTRACT_EXPIRED,
    CONTRACT_MISMATCH,
    CONTRACT_NOT_ACTIVE,
    PROHIBITED_DATA,
    ContractRefusal,
    unknown_contract,
)
from accord.contracts._record import ContractRecord
from accord.contracts._wire import Reference
from accord.wire import Message, format_timestamp

Decision = Literal["allow", "park"]
ALLOW: Decision = "allow"
PARK: Decision = "park"


def judge(
    record: ContractRecord | None,
    reference: Reference,
    *,
    sender: str | None,
    action: str | None,
    data_classes: tuple[str, ...] = (),
    task_id: str | None,
    now_ms: int,
) -> Decision:
    """``sender`` is the authenticated identity of the caller (None: not authenticated);
    ``task_id`` the task the message continues (None: a new one)."""
    interaction_id = reference.interaction_id

    def refuse(code: str, message: str) -> ContractRefusal:
        return ContractRefusal(code, message, interaction_id=interaction_id)

    if record is None or sender is None or sender != record.counterparty:
        who = "an unauthenticated sender" if sender is None else repr(sender)
        raise unknown_contract(interaction_id, exists=record is not None, who=who)
    if reference.terms_hash != record.terms_hash:
        raise refuse(CONTRACT_MISMATCH, "the message names other terms than the accepted ones")
    if (reference.initiator, reference.responder) != (record.initiator, record.responder):
        raise refuse(CONTRACT_MISMATCH, "the message names other parties than the contract's")
    if record.status == "expired" or (
        record.status in ("pending", "active") and now_ms >= record.expires_ms
    ):
        raise refuse(
            CONTRACT_EXPIRED,
            f"contract {interaction_id} expired at {format_timestamp(record.expires_ms)}",
        )
    if record.status != "active":
        raise refuse(CONTRACT_NOT_ACTIVE, f"contract {interaction_id} is {record.status}")
    terms = record.terms
    if action is None:
        raise refuse(ACTION_OUTSIDE_CONTRACT, "the message names no action the contract allows")
    if action in terms["prohibitedActions"]:
        raise refuse(ACTION_OUTSIDE_CONTRACT, f"action {action!r} is prohibited by the contract")
    if action not in terms["allowedActions"]:
        raise refuse(ACTION_OUTSIDE_CONTRACT, f"action {action!r} is not allowed by the contract")
    for data_class in data_classes:
        if data_class in terms["prohibitedData"]:
            raise refuse(
                PROHIBITED_DATA, f"data class {data_class!r} is prohibited by the contract"
            )
        if data_class not in terms["allowedData"]:
            raise refuse(
                PROHIBITED_DATA, f"data class {data_class!r} is not allowed by the contract"
            )
    if action in terms["humanApprovalRequirements"] and not (
        task_id is not None and record.approved(task_id, action)
    ):
        return PARK
    return ALLOW


def requested_action(
    message: Message,
    *,
    declared: str | None,
    agent_says: str | None = None,
    skills: tuple[str, ...] = (),
) -> str | None:
    """The action a message asks for, in this order: the action it declares in accord's
    metadata; what the agent says of it (an agent's ``contract_action(message)``); a command
    (a text message ``/name …``, the harness's command syntax); the agent's only skill, when
    its card lists exactly one. None when nothing names one (and the message is refused)."""
    if declared:
        return declared
    if agent_says:
        return agent_says
    text = message.text().strip()
    if text.startswith("/"):
        name = text[1:].split(None, 1)[0] if len(text) > 1 else ""
        if name:
            return name
    return skills[0] if len(skills) == 1 else None
