"""The lifecycle: who may make which move from which status; terminal statuses never change;
expiry at expiresAt or the terms' deadline; completion by both, or by one after a window."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from accord.contracts import _lifecycle as lifecycle
from accord.contracts._errors import (
    CONTRACT_CONFLICT,
    CONTRACT_EXPIRED,
    INVALID_DOCUMENT,
    NOT_PERMITTED,
    ContractRefusal,
)
from accord.contracts._record import ContractRecord

from .contract_helpers import HOUR_MS, NOW_MS, accepted, new_key, proposal, terms

A_KEY, B_KEY = new_key(), new_key()
LATER = NOW_MS + HOUR_MS


def pending(local: str = "agent:b", **kwargs: object) -> ContractRecord:
    record, event = lifecycle.propose(
        proposal(A_KEY, **kwargs),  # type: ignore[arg-type]
        tenant="t",
        local_agent=local,
        now_ms=NOW_MS,
    )
    assert (record.status, record.version, event.kind, event.actor) == (
        "pending", 1, "proposed", "agent:a",
    )  # fmt: skip
    return record


def active(local: str = "agent:b") -> ContractRecord:
    record = pending(local)
    acceptance = accepted(record.document, B_KEY, LATER)
    return lifecycle.accept(record, acceptance, by="agent:b", now_ms=LATER)[0]


Move = Callable[[ContractRecord, str], object]
MOVES: dict[str, Move] = {
    "accept": lambda r, by: lifecycle.accept(
        r, accepted(r.document, B_KEY, LATER), by=by, now_ms=LATER
    ),
    "reject": lambda r, by: lifecycle.reject(r, by=by, reason="no", now_ms=LATER),
    "withdraw": lambda r, by: lifecycle.withdraw(r, by=by, reason="", now_ms=LATER),
    "cancel": lambda r, by: lifecycle.cancel(r, by=by, reason="stop", now_ms=LATER),
    "complete": lambda r, by: lifecycle.complete(r, by=by, now_ms=LATER),
}

# (status, move, who) -> allowed; everything not listed is refused.
ALLOWED = {
    ("pending", "accept", "agent:b"),
    ("pending", "reject", "agent:b"),
    ("pending", "withdraw", "agent:a"),
    ("active", "cancel", "agent:a"),
    ("active", "cancel", "agent:b"),
    ("active", "complete", "agent:a"),
    ("active", "complete", "agent:b"),
}


@pytest.mark.parametrize("move", MOVES)
@pytest.mark.parametrize("by", ["agent:a", "agent:b", "agent:c"])
@pytest.mark.parametrize("status", ["pending", "active"])
def test_who_may_do_what(status: str, move: str, by: str) -> None:
    record = pending() if status == "pending" else active()
    if (status, move, by) in ALLOWED:
        new, event = MOVES[move](record, by)  # type: ignore[misc]
        assert new.version == record.version + 1 and event.actor == by
        return
    with pytest.raises(ContractRefusal) as refused:
        MOVES[move](record, by)
    assert refused.value.code in (NOT_PERMITTED, CONTRACT_CONFLICT)


def test_accepting_adds_the_responders_acceptance_and_activates() -> None:
    record = pending()
    acceptance = accepted(record.document, B_KEY, LATER)
    new, event = lifecycle.accept(record, acceptance, by="agent:b", now_ms=LATER)
    assert new.status == "active" and event.kind == "accepted"
    assert new.document["acceptances"] == {
        "agent:a": record.document["acceptances"]["agent:a"], "agent:b": acceptance,
    }  # fmt: skip
    assert new.document["updatedAt"] != record.document["updatedAt"]
    assert new.document["termsHash"] == record.document["termsHash"]


def test_cancel_records_who_when_and_why() -> None:
    new, event = lifecycle.cancel(active(), by="agent:a", reason="changed plans", now_ms=LATER)
    assert new.status == "cancelled"
    assert new.ending is not None
    assert (new.ending.by, new.ending.reason) == ("agent:a", "changed plans")
    assert event.detail == {"reason": "changed plans"}


@pytest.mark.parametrize(
    "end",
    [
        lambda: lifecycle.reject(pending(), by="agent:b", reason="", now_ms=LATER)[0],
        lambda: lifecycle.withdraw(pending(), by="agent:a", reason="", now_ms=LATER)[0],
        lambda: lifecycle.cancel(active(), by="agent:b", reason="", now_ms=LATER)[0],
        lambda: lifecycle.expire(pending(), now_ms=NOW_MS + 100 * HOUR_MS)[0],  # type: ignore[index]
        lambda: lifecycle.complete(
            lifecycle.complete(active(), by="agent:a", now_ms=LATER)[0], by="agent:b", now_ms=LATER
        )[0],
    ],
    ids=["rejected", "withdrawn", "cancelled", "expired", "completed"],
)
def test_terminal_statuses_never_change(end: Callable[[], ContractRecord]) -> None:
    record = end()
    assert record.terminal
    for move in MOVES.values():
        for by in ("agent:a", "agent:b"):
            with pytest.raises(ContractRefusal):
                move(record, by)
    assert lifecycle.expire(record, now_ms=NOW_MS + 1000 * HOUR_MS) is None
    assert lifecycle.settle(record, now_ms=NOW_MS + 1000 * HOUR_MS, window_ms=1) is None
    assert lifecycle.due_ms(record, HOUR_MS) is None


def test_expiry_at_expires_at_or_the_deadline_when_earlier() -> None:
    record = pending()
    assert lifecycle.expire(record, now_ms=record.expires_ms - 1) is None
    expired, event = lifecycle.expire(record, now_ms=record.expires_ms)  # type: ignore[misc]
    assert (expired.status, event.actor) == ("expired", "clock")
    deadline = "2027-01-15T10:00:00Z"  # two hours after NOW_MS, before expiresAt
    early = pending(contract=terms(deadline=deadline))
    assert early.expires_ms == NOW_MS + 2 * HOUR_MS
    assert lifecycle.expire(early, now_ms=NOW_MS + 2 * HOUR_MS) is not None


def test_a_move_after_expiry_is_refused_as_expired() -> None:
    record = active()
    with pytest.raises(ContractRefusal) as refused:
        lifecycle.cancel(record, by="agent:a", reason="", now_ms=record.expires_ms + 1)
    assert refused.value.code == CONTRACT_EXPIRED


def test_a_proposal_must_be_live_and_carry_only_the_initiators_acceptance() -> None:
    document = proposal(A_KEY)
    with pytest.raises(ContractRefusal) as refused:
        lifecycle.propose(
            document, tenant="t", local_agent="agent:b", now_ms=NOW_MS + 100 * HOUR_MS
        )
    assert refused.value.code == INVALID_DOCUMENT
    both = {**document, "acceptances": {
        **document["acceptances"], "agent:b": accepted(document, B_KEY, NOW_MS)}}  # fmt: skip
    with pytest.raises(ContractRefusal, match="exactly one acceptance"):
        lifecycle.propose(both, tenant="t", local_agent="agent:b", now_ms=NOW_MS)
    with pytest.raises(ContractRefusal, match="not a party"):
        lifecycle.propose(document, tenant="t", local_agent="agent:c", now_ms=NOW_MS)


def test_completion_by_both_or_by_one_after_the_window() -> None:
    record = active()
    half, event = lifecycle.complete(record, by="agent:a", now_ms=LATER)
    assert (half.status, event.kind, list(half.completions)) == (
        "active",
        "completion",
        ["agent:a"],
    )
    window = 24 * HOUR_MS
    assert lifecycle.due_ms(half, window) == LATER + window
    assert lifecycle.settle(half, now_ms=LATER + window - 1, window_ms=window) is None
    settled, _ = lifecycle.settle(half, now_ms=LATER + window, window_ms=window)  # type: ignore[misc]
    assert settled.status == "completed"
    assert settled.ending is not None and "did not complete" in settled.ending.reason
    both, event = lifecycle.complete(half, by="agent:b", now_ms=LATER)
    assert (both.status, event.kind) == ("completed", "completed")
    # Completing twice is not refused and changes nothing but the version.
    again, _ = lifecycle.complete(half, by="agent:a", now_ms=LATER + 5)
    assert again.completions == half.completions


def test_approvals_are_recorded_once_per_task_and_action() -> None:
    record = active()
    approved, event = lifecycle.approve(
        record, task_id="t1", action="purchase", by="alice", now_ms=LATER
    )
    assert approved.approved("t1", "purchase") and not approved.approved("t2", "purchase")
    assert event.detail == {"taskId": "t1", "action": "purchase"}
    with pytest.raises(ContractRefusal, match="approved already"):
        lifecycle.approve(approved, task_id="t1", action="purchase", by="alice", now_ms=LATER)
    with pytest.raises(ContractRefusal):
        lifecycle.approve(pending(), task_id="t1", action="purchase", by="alice", now_ms=LATER)
