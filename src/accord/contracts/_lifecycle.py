"""The contract lifecycle: who may make which move from which status.

::

    ∅ ──propose (initiator)──▶ pending ──accept (responder)──▶ active ──complete (both)──▶ completed
                                │  │                            │  │
                reject (responder)  withdraw (initiator)   cancel (either)  complete (one) + window
                                ▼  ▼                            ▼  ▼
                          rejected  cancelled             cancelled  completed
         pending or active, at expiresAt or the terms' deadline ──▶ expired

Terminal statuses (rejected, expired, cancelled, completed) never change. Every function here
is pure: the record and the time go in, the new record and the event for the contract's log
come out, or :class:`~accord.contracts._errors.ContractRefusal` says why not. A move on a
pending or active contract past its expiry is refused with ``contract_expired``; the caller
then records the expiry (:func:`expire`).
"""

from __future__ import annotations

from typing import Any

from accord.contracts._errors import (
    CONTRACT_CONFLICT,
    CONTRACT_EXPIRED,
    INVALID_DOCUMENT,
    NOT_PERMITTED,
    ContractRefusal,
)
from accord.contracts._record import LIVE, Approval, ContractRecord, Ending, Event
from accord.wire import format_timestamp, parse_timestamp

Moved = tuple[ContractRecord, Event]


def _conflict(record: ContractRecord, wanted: str, move: str) -> ContractRefusal:
    if record.terminal:
        why = f"it is {record.status}, and a {record.status} contract never changes"
    else:
        why = f"it is {record.status}; {move} needs a {wanted} contract"
    return ContractRefusal(
        CONTRACT_CONFLICT,
        f"cannot {move} {record.interaction_id}: {why}",
        interaction_id=record.interaction_id,
    )


def _live_check(record: ContractRecord, statuses: frozenset[str], move: str, now_ms: int) -> None:
    if record.status not in statuses:
        raise _conflict(record, " or ".join(sorted(statuses)), move)
    if now_ms >= record.expires_ms:
        raise ContractRefusal(
            CONTRACT_EXPIRED,
            f"cannot {move} {record.interaction_id}: it expired at "
            f"{format_timestamp(record.expires_ms)}",
            interaction_id=record.interaction_id,
        )


def _party(record: ContractRecord, by: str, allowed: tuple[str, ...], move: str) -> None:
    if by not in allowed:
        who = " or ".join(allowed)
        raise ContractRefusal(
            NOT_PERMITTED,
            f"{by} may not {move} {record.interaction_id}: only {who} may",
            interaction_id=record.interaction_id,
        )


def _moved(
    record: ContractRecord,
    kind: str,
    by: str,
    now_ms: int,
    *,
    status: str | None = None,
    detail: dict[str, Any] | None = None,
    **changes: Any,
) -> Moved:
    document = record.document
    if status is not None:
        document = {**document, "status": status, "updatedAt": format_timestamp(now_ms)}
    version = record.version + 1
    new = record.replace(document=document, version=version, **changes)
    return new, Event(version, kind, now_ms, by, detail or {})


def _ended(
    record: ContractRecord, kind: str, status: str, by: str, reason: str, now_ms: int
) -> Moved:
    ending = Ending(status=status, by=by, at=format_timestamp(now_ms), reason=reason)
    detail = {"reason": reason} if reason else {}
    return _moved(record, kind, by, now_ms, status=status, detail=detail, ending=ending)


def propose(document: dict[str, Any], *, tenant: str, local_agent: str, now_ms: int) -> Moved:
    """A new pending contract (a proposal made here, or received). The document is already
    schema-valid and consistent (accord.contracts._documents); this checks what the lifecycle
    needs of a proposal: pending, only the initiator's acceptance, an expiry to come."""
    interaction_id = str(document["interactionId"])
    initiator = str(document["initiatorAgentId"])

    def refuse(message: str) -> ContractRefusal:
        return ContractRefusal(INVALID_DOCUMENT, message, interaction_id=interaction_id)

    if document["status"] != "pending":
        raise refuse(f"a proposal must be pending, not {document['status']}")
    if list(document["acceptances"]) != [initiator]:
        raise refuse("a proposal carries exactly one acceptance, the initiator's")
    record = ContractRecord(tenant=tenant, document=document, local_agent=local_agent)
    if record.expires_ms <= now_ms:
        raise refuse("expiresAt (or the deadline) has passed already")
    if local_agent not in (initiator, record.responder):
        raise refuse(f"{local_agent} is not a party to it")
    return record, Event(1, "proposed", now_ms, initiator, {})


def accept(record: ContractRecord, acceptance: dict[str, Any], *, by: str, now_ms: int) -> Moved:
    """pending → active, by the responder, whose (verified) acceptance is added."""
    _party(record, by, (record.responder,), "accept")
    _live_check(record, frozenset({"pending"}), "accept", now_ms)
    new, event = _moved(record, "accepted", by, now_ms, status="active")
    document = {**new.document, "acceptances": {**record.document["acceptances"], by: acceptance}}
    return new.replace(document=document), event


def reject(record: ContractRecord, *, by: str, reason: str, now_ms: int) -> Moved:
    """pending → rejected, by the responder."""
    _party(record, by, (record.responder,), "reject")
    _live_check(record, frozenset({"pending"}), "reject", now_ms)
    return _ended(record, "rejected", "rejected", by, reason, now_ms)


def withdraw(record: ContractRecord, *, by: str, reason: str, now_ms: int) -> Moved:
    """pending → cancelled, by the initiator (taking its proposal back)."""
    _party(record, by, (record.initiator,), "withdraw")
    _live_check(record, frozenset({"pending"}), "withdraw", now_ms)
    return _ended(record, "withdrawn", "cancelled", by, reason, now_ms)


def cancel(record: ContractRecord, *, by: str, reason: str, now_ms: int) -> Moved:
    """active → cancelled, by either party."""
    _party(record, by, (record.initiator, record.responder), "cancel")
    _live_check(record, frozenset({"active"}), "cancel", now_ms)
    return _ended(record, "cancelled", "cancelled", by, reason, now_ms)


def complete(record: ContractRecord, *, by: str, now_ms: int) -> Moved:
    """A party's completion of an active contract: completed once both parties have; a
    repeated completion by the same party changes nothing but is not refused."""
    _party(record, by, (record.initiator, record.responder), "complete")
    _live_check(record, frozenset({"active"}), "complete", now_ms)
    completions = {**record.completions}
    completions.setdefault(by, format_timestamp(now_ms))
    if set(completions) >= {record.initiator, record.responder}:
        ending = Ending(status="completed", by=by, at=format_timestamp(now_ms))
        return _moved(
            record,
            "completed",
            by,
            now_ms,
            status="completed",
            completions=completions,
            ending=ending,
        )
    return _moved(record, "completion", by, now_ms, completions=completions)


def settle(record: ContractRecord, *, now_ms: int, window_ms: int) -> Moved | None:
    """active → completed when one party completed and the other has not answered within
    ``window_ms``; None while that is not so."""
    if record.status != "active" or len(record.completions) != 1:
        return None
    ((by, at),) = record.completions.items()
    if now_ms < parse_timestamp(at) + window_ms:
        return None
    reason = (
        f"{record.counterparty if by == record.local_agent else record.local_agent} did "
        "not complete within the completion window"
    )
    return _ended(record, "completed", "completed", by, reason, now_ms)


def settles_at(record: ContractRecord, window_ms: int) -> int | None:
    """When :func:`settle` will complete the contract, if it is waiting for one party."""
    if record.status != "active" or len(record.completions) != 1:
        return None
    (at,) = record.completions.values()
    return parse_timestamp(at) + window_ms


def expire(record: ContractRecord, *, now_ms: int) -> Moved | None:
    """pending or active → expired once ``expiresAt`` (or the deadline) has passed; None
    when it has not, or the contract ended already."""
    if record.status not in LIVE or now_ms < record.expires_ms:
        return None
    return _ended(record, "expired", "expired", "clock", "", now_ms)


def approve(record: ContractRecord, *, task_id: str, action: str, by: str, now_ms: int) -> Moved:
    """A person of this agent approves ``action`` on the task parked for it."""
    _live_check(record, frozenset({"active"}), "approve a task under", now_ms)
    if record.approved(task_id, action):
        raise ContractRefusal(
            CONTRACT_CONFLICT,
            f"{action!r} on task {task_id} is approved already",
            interaction_id=record.interaction_id,
        )
    approval = Approval(task_id=task_id, action=action, by=by, at=format_timestamp(now_ms))
    return _moved(
        record,
        "approved",
        by,
        now_ms,
        detail={"taskId": task_id, "action": action},
        approvals=(*record.approvals, approval),
    )


def due_ms(record: ContractRecord, window_ms: int) -> int | None:
    """When the sweeper must look at the record next (expiry, a completion window ending),
    or None once it is terminal."""
    if record.status not in LIVE:
        return None
    settling = settles_at(record, window_ms)
    return record.expires_ms if settling is None else min(record.expires_ms, settling)
