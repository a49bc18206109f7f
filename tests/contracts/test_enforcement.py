"""The enforcement decision, code by code, and how a message names its action."""

from __future__ import annotations

import pytest

from accord.contracts import _enforcement as enforcement
from accord.contracts import _lifecycle as lifecycle
from accord.contracts._errors import (
    ACTION_OUTSIDE_CONTRACT,
    CONTRACT_EXPIRED,
    CONTRACT_MISMATCH,
    CONTRACT_NOT_ACTIVE,
    CONTRACT_UNKNOWN,
    PROHIBITED_DATA,
    ContractRefusal,
)
from accord.contracts._record import ContractRecord
from accord.contracts._wire import (
    CONTRACTS_URI,
    TRUST_URI,
    Asked,
    Reference,
    asked_of,
    reference_of,
    under_contract,
)
from accord.wire._model import Message, Part, Role

from .contract_helpers import HOUR_MS, NOW_MS, accepted, new_key, proposal, terms

A_KEY, B_KEY = new_key(), new_key()
TERMS = terms(
    allowedActions=["browse", "purchase", "delete"],
    prohibitedActions=["delete"],
    allowedData=["public", "internal"],
    prohibitedData=["secrets", "internal"],
    humanApprovalRequirements=["purchase"],
)


def record(status: str = "active") -> ContractRecord:
    pending, _ = lifecycle.propose(
        proposal(A_KEY, contract=TERMS), tenant="t", local_agent="agent:b", now_ms=NOW_MS
    )
    if status == "pending":
        return pending
    acceptance = accepted(pending.document, B_KEY, NOW_MS)
    active, _ = lifecycle.accept(pending, acceptance, by="agent:b", now_ms=NOW_MS)
    if status == "cancelled":
        return lifecycle.cancel(active, by="agent:a", reason="", now_ms=NOW_MS)[0]
    return active


def judge(
    found: ContractRecord | None,
    *,
    sender: str | None = "agent:a",
    action: str | None = "browse",
    data: tuple[str, ...] = (),
    task_id: str | None = None,
    now_ms: int = NOW_MS + 1,
    reference: Reference | None = None,
) -> str:
    reference = reference or Reference.of(record().document)
    return enforcement.judge(
        found, reference, sender=sender, action=action, data_classes=data,
        task_id=task_id, now_ms=now_ms,
    )  # fmt: skip


def refused(**kwargs: object) -> str:
    found = kwargs.pop("found", record())
    with pytest.raises(ContractRefusal) as refusal:
        judge(found, **kwargs)  # type: ignore[arg-type]
    return refusal.value.code


def refusal(**kwargs: object) -> tuple[str, str, str, dict[str, str]]:
    """The refusal as the sender gets it: its A2A error's kind, message and metadata."""
    found = kwargs.pop("found", record())
    with pytest.raises(ContractRefusal) as refused:
        judge(found, **kwargs)  # type: ignore[arg-type]
    error = refused.value.as_a2a()
    return refused.value.code, error.kind.name, error.message, error.metadata


def test_an_allowed_action_from_the_other_party_passes() -> None:
    assert judge(record()) == enforcement.ALLOW
    assert judge(record(), data=("public",)) == enforcement.ALLOW


def test_each_refusal_has_its_code() -> None:
    current = record()
    reference = Reference.of(current.document)
    assert refused(found=None) == CONTRACT_UNKNOWN
    other_hash = Reference(reference.interaction_id, "x" * 43, "agent:a", "agent:b")
    # Anyone but the other party is told exactly what a contract that does not exist tells
    # (whatever else is wrong with its message): not that it exists, nor who it is with.
    unknown = refusal(found=None, reference=other_hash)
    for sender in (None, "agent:c", "agent:b"):  # (agent:b: ourselves, not the other party)
        for found in (record(), record("pending"), record("cancelled")):
            shown = refusal(found=found, sender=sender, reference=other_hash)
            assert shown == unknown, (sender, found.status)
    assert refused(reference=other_hash) == CONTRACT_MISMATCH
    swapped = Reference(reference.interaction_id, reference.terms_hash, "agent:b", "agent:a")
    assert refused(reference=swapped) == CONTRACT_MISMATCH
    assert refused(now_ms=current.expires_ms) == CONTRACT_EXPIRED
    assert refused(found=record("pending")) == CONTRACT_NOT_ACTIVE
    assert refused(found=record("cancelled")) == CONTRACT_NOT_ACTIVE
    assert refused(action="sell") == ACTION_OUTSIDE_CONTRACT
    assert refused(action=None) == ACTION_OUTSIDE_CONTRACT
    assert refused(data=("secrets",)) == PROHIBITED_DATA
    assert refused(data=("public", "biometrics")) == PROHIBITED_DATA


def test_prohibited_wins_and_an_empty_allow_list_allows_nothing() -> None:
    assert refused(action="delete") == ACTION_OUTSIDE_CONTRACT  # allowed and prohibited
    assert refused(data=("internal",)) == PROHIBITED_DATA
    nothing = record()
    nothing = nothing.replace(
        document={**nothing.document, "contract": {**nothing.terms, "allowedActions": []}}
    )
    assert refused(found=nothing, action="browse") == ACTION_OUTSIDE_CONTRACT


def test_matching_is_exact() -> None:
    assert refused(action="Browse") == ACTION_OUTSIDE_CONTRACT
    assert refused(action="browse ") == ACTION_OUTSIDE_CONTRACT


def test_an_action_needing_approval_parks_until_approved_for_that_task() -> None:
    current = record()
    assert judge(current, action="purchase") == enforcement.PARK
    assert judge(current, action="purchase", task_id="t1") == enforcement.PARK
    approved, _ = lifecycle.approve(
        current, task_id="t1", action="purchase", by="alice", now_ms=NOW_MS
    )
    assert judge(approved, action="purchase", task_id="t1") == enforcement.ALLOW
    assert judge(approved, action="purchase", task_id="t2") == enforcement.PARK
    assert judge(approved, action="purchase") == enforcement.PARK  # a new task


def text(value: str, metadata: dict | None = None) -> Message:
    kwargs = {"metadata": metadata} if metadata is not None else {}
    return Message(message_id="m", role=Role.USER, parts=[Part(text=value)], **kwargs)


def test_the_action_a_message_asks_for() -> None:
    declared = text("hello", {CONTRACTS_URI: {"action": "browse"}})
    assert enforcement.requested_action(declared, declared="browse", skills=("a", "b")) == "browse"
    plain = text("/purchase 3 widgets")
    assert enforcement.requested_action(plain, declared=None) == "purchase"
    assert enforcement.requested_action(plain, declared=None, agent_says="buy") == "buy"
    assert enforcement.requested_action(text("hi"), declared=None, skills=("only",)) == "only"
    assert enforcement.requested_action(text("hi"), declared=None, skills=("a", "b")) is None
    assert enforcement.requested_action(text("/"), declared=None) is None


def test_malformed_references_are_refused_as_mismatches() -> None:
    assert reference_of(text("hi")) is None
    good = Reference.of(record().document).metadata()
    assert reference_of(text("hi", {TRUST_URI: good})) == Reference.of(record().document)
    for bad in (
        "x",
        {**good, "termsHash": ""},
        {k: v for k, v in good.items() if k != "termsHash"},
    ):
        with pytest.raises(ContractRefusal) as refusal:
            reference_of(text("hi", {TRUST_URI: bad}))
        assert refusal.value.code == CONTRACT_MISMATCH
    for bad_asked in ("x", {"action": ""}, {"dataClasses": "public"}, {"action": "a" * 201}):
        with pytest.raises(ContractRefusal):
            asked_of(text("hi", {CONTRACTS_URI: bad_asked}))
    assert asked_of(text("hi", {CONTRACTS_URI: {"dataClasses": ["x"]}})).data_classes == ("x",)


def test_expiry_is_checked_against_the_clock_not_only_the_status() -> None:
    current = record()
    assert current.status == "active"
    assert refused(found=current, now_ms=NOW_MS + 72 * HOUR_MS) == CONTRACT_EXPIRED


def test_the_metadata_of_a_message_under_a_contract_reads_back() -> None:
    document = record().document
    metadata = under_contract(document, "browse", ("public",))
    message = text("hi", metadata)
    assert reference_of(message) == Reference.of(document)
    assert asked_of(message) == Asked(action="browse", data_classes=("public",))
    assert set(under_contract(document)) == {TRUST_URI}
