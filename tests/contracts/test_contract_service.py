"""The contract service on a real store: what the sweeper does (expiry, completion windows,
notices owed, retention), expiry checked on every use, a contract's end cancelling its tasks,
and how notices from the other agent are checked."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest
from tests.waiting import until

from accord.contracts._errors import (
    INVALID_ACCEPTANCE,
    INVALID_DOCUMENT,
    NOT_A_PARTY,
    PEER_UNREACHABLE,
    ContractRefusal,
)
from accord.contracts._proofs import channel_acceptance, signed_acceptance
from accord.contracts._service import ContractService
from accord.contracts._settings import Peer
from accord.contracts._wire import CONTRACTS_URI, TRUST_URI, Notice, Reference
from accord.core._caller import Caller
from accord.core._records import TaskRecord
from accord.signing._keys import KeySet
from accord.wire._errors import A2AError
from accord.wire._model import Message, Part, Role, SendMessageRequest, Task, TaskState
from accord.wire._time import format_timestamp

from .contract_helpers import HOUR_MS, new_key, proposal, public, terms
from .service_helpers import FakePeers, now_ms, responder_service

A_KEY, B_KEY = new_key(), new_key()
AGENT_A = Caller(identity="agent:a", tenant="", authenticated=True)


async def proposed(service: ContractService, **kwargs: Any) -> dict[str, Any]:
    contract = terms(interactionId=str(uuid.uuid4()), **kwargs.pop("terms", {}))
    document = proposal(A_KEY, contract=contract, now_ms=now_ms(), **kwargs)
    await service.receive(Notice("proposal", document["interactionId"], document), AGENT_A)
    return document


async def active(service: ContractService, **kwargs: Any) -> dict[str, Any]:
    document = await proposed(service, **kwargs)
    return (await service.accept("", document["interactionId"])).document


async def needing_approval(service: ContractService) -> dict[str, Any]:
    """An active contract whose action ``purchase`` waits for a person's approval."""
    return await active(
        service, terms={"humanApprovalRequirements": ["purchase"],
                        "allowedActions": ["browse", "purchase"], "prohibitedActions": []},
    )  # fmt: skip


async def send(
    service: ContractService, document: dict[str, Any], action: str = "browse", task_id: str = ""
) -> Task | Message:
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.USER,
        parts=[Part(text="hi")],
        task_id=task_id,
        metadata={
            TRUST_URI: Reference.of(document).metadata(),
            CONTRACTS_URI: {"action": action},
        },
    )
    return await service.engine.send_message(SendMessageRequest(message=message), AGENT_A)


async def test_expiry_is_checked_on_every_use(store_url: str) -> None:
    async with responder_service(store_url, B_KEY, public(A_KEY)) as service:
        document = await active(service, expires_ms=now_ms() + HOUR_MS)
        interaction_id = document["interactionId"]
        later = now_ms() + 2 * HOUR_MS
        service.clock = lambda: later  # an hour after expiresAt; the sweeper has not run
        found = await service.current("", interaction_id)
        assert found is not None and found.status == "expired"
        with pytest.raises(ContractRefusal, match=r"cancelled|expired"):
            await service.cancel("", interaction_id, "too late")


async def test_the_sweeper_expires_settles_and_delivers(store_url: str) -> None:
    async with responder_service(
        store_url, B_KEY, public(A_KEY), completion_window_s=60
    ) as service:
        peers = service.peers
        assert isinstance(peers, FakePeers)
        expiring = await proposed(service, expires_ms=now_ms() + HOUR_MS)
        settling = await active(service)
        await service.complete("", settling["interactionId"])
        start = now_ms()
        service.clock = lambda: start + 2 * HOUR_MS
        await service.sweep()
        assert (await service.get("", expiring["interactionId"])).status == "expired"
        settled = await service.get("", settling["interactionId"])
        assert settled.status == "completed"
        assert settled.ending is not None and "did not complete" in settled.ending.reason
        await service.sweep()  # nothing left to do: terminal records are never due
        assert await service.store.due(start + 100 * HOUR_MS, 10) == []


async def test_a_notice_the_other_agent_cannot_get_is_sent_again(store_url: str) -> None:
    async with responder_service(store_url, B_KEY, public(A_KEY)) as service:
        peers = service.peers
        assert isinstance(peers, FakePeers)
        delivered = peers.send

        async def down(*args: Any) -> str:
            raise ContractRefusal(PEER_UNREACHABLE, "connection refused")

        peers.send = down  # type: ignore[method-assign]
        document = await proposed(service)
        record = await service.accept("", document["interactionId"])
        assert record.status == "active" and record.outbox == ("acceptance",)
        peers.send = delivered  # type: ignore[method-assign]
        await service.sweep()
        assert [n.kind for _, n in peers.sent] == ["acceptance"]
        record = await service.get("", document["interactionId"])
        assert record.outbox == ()
        events = await service.events("", document["interactionId"])
        assert events[-1].detail == {"notice": "acceptance", "outcome": "delivered"}


async def test_a_contract_that_ends_cancels_its_tasks_and_retention_deletes_them(
    store_url: str,
) -> None:
    async with responder_service(store_url, B_KEY, public(A_KEY)) as service:
        document = await active(
            service, terms={"humanApprovalRequirements": ["purchase"], "retentionDays": 0,
                            "allowedActions": ["browse", "purchase"], "prohibitedActions": []},
        )  # fmt: skip
        interaction_id = document["interactionId"]
        done = await send(service, document)
        parked = await send(service, document, action="purchase")
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
        assert isinstance(parked, Task) and parked.status.state is TaskState.INPUT_REQUIRED
        assert await service.store.bound_tasks("", interaction_id) == sorted([done.id, parked.id])
        await service.cancel("", interaction_id, "no longer needed")
        canceled = await service.engine.store.get_task(parked.id, "")
        assert canceled is not None and canceled.state is TaskState.CANCELED
        # retentionDays 0: both are deleted at the next pass, and unbound.
        await service.sweep()
        assert await service.engine.store.get_task(done.id, "") is None
        assert await service.engine.store.get_task(parked.id, "") is None
        assert await service.store.bound_tasks("", interaction_id) == []


async def test_retention_keeps_tasks_for_their_days(store_url: str) -> None:
    async with responder_service(store_url, B_KEY, public(A_KEY)) as service:
        document = await active(service, terms={"retentionDays": 2})
        done = await send(service, document)
        assert isinstance(done, Task)
        start = now_ms()
        service.clock = lambda: start + 47 * HOUR_MS
        await service.sweep()
        assert await service.engine.store.get_task(done.id, "") is not None
        service.clock = lambda: start + 49 * HOUR_MS
        await service.sweep()
        assert await service.engine.store.get_task(done.id, "") is None


async def test_an_approval_needs_a_task_parked_for_it() -> None:
    async with responder_service("memory://", B_KEY, public(A_KEY)) as service:
        document = await needing_approval(service)
        interaction_id = document["interactionId"]
        done = await send(service, document)
        assert isinstance(done, Task)
        with pytest.raises(ContractRefusal, match="not waiting for an approval"):
            await service.approve("", interaction_id, done.id, "alice")
        with pytest.raises(ContractRefusal, match="does not run under"):
            await service.approve("", interaction_id, "some-other-task", "alice")
        parked = await send(service, document, action="purchase")
        assert isinstance(parked, Task)
        record = await service.approve("", interaction_id, parked.id, "alice")
        assert record.approvals[0].by == "alice"

        async def completed() -> TaskRecord | None:
            task = await service.engine.store.get_task(parked.id, "")
            assert task is not None
            return task if task.state is TaskState.COMPLETED else None

        task = await until(completed, "the approved task to run")
        assert task.state is TaskState.COMPLETED
        # An approval is of that task: another task asking the same waits again.
        other = await send(service, document, action="purchase")
        assert isinstance(other, Task) and other.status.state is TaskState.INPUT_REQUIRED


async def test_proposals_are_checked_before_they_are_taken() -> None:
    async with responder_service("memory://", B_KEY, public(A_KEY)) as service:
        document = proposal(A_KEY, contract=terms(interactionId=str(uuid.uuid4())), now_ms=now_ms())
        notice = Notice("proposal", document["interactionId"], document)
        stranger = Caller(identity="agent:c", tenant="", authenticated=True)
        cases: list[tuple[Notice, Caller, str]] = [
            (notice, stranger, NOT_A_PARTY),  # on agent:a's behalf
            (notice, Caller(identity="agent:a"), NOT_A_PARTY),  # not authenticated
        ]
        moved = copy.deepcopy(document)
        moved["responderTransport"]["endpoint"] = "https://elsewhere.example"
        cases.append((Notice("proposal", moved["interactionId"], moved), AGENT_A, INVALID_DOCUMENT))
        # Dated long before the contract was made (properly signed, with a key valid then):
        # refused, so that a retired key cannot sign backdated acceptances.
        old = proposal(A_KEY, contract=terms(interactionId=str(uuid.uuid4())), now_ms=now_ms())
        old["acceptances"]["agent:a"] = signed_acceptance(
            old["interactionId"], "agent:a", old["termsHash"],
            format_timestamp(now_ms() - 48 * HOUR_MS), A_KEY,
        )  # fmt: skip
        cases.append((Notice("proposal", old["interactionId"], old), AGENT_A, INVALID_ACCEPTANCE))
        for bad, sender, code in cases:
            with pytest.raises(ContractRefusal) as refused:
                await service.receive(bad, sender)
            assert refused.value.code == code, refused.value
        # Delivered twice, the same proposal is taken once.
        first = await service.receive(notice, AGENT_A)
        again = await service.receive(notice, AGENT_A)
        assert first == again


async def test_an_agent_without_keys_accepts_through_its_authenticated_channel() -> None:
    async with responder_service("memory://", B_KEY, public(A_KEY)) as service:
        service.identity = type(service.identity)("agent:b", KeySet())  # no keys here
        document = await proposed(service)
        record = await service.accept("", document["interactionId"])
        acceptance = record.document["acceptances"]["agent:b"]
        assert acceptance["method"] == "oauth_account" and "signature" not in acceptance


def unsigned_proposal() -> Notice:
    """agent:a's proposal with its acceptance unsigned (oauth_account)."""
    document = proposal(A_KEY, contract=terms(interactionId=str(uuid.uuid4())), now_ms=now_ms())
    document["acceptances"]["agent:a"] = channel_acceptance(
        "agent:a", document["termsHash"], document["createdAt"]
    )
    return Notice("proposal", document["interactionId"], document)


async def test_an_unsigned_acceptance_is_taken_only_where_signatures_are_not_required() -> None:
    """An oauth_account acceptance comes only from the agent it names, and — by default —
    only from an agent that publishes no keys: one that does must sign
    (require_signed_acceptances, which the operator may also set for every peer, or per
    peer, either way)."""
    stranger = Caller(identity="agent:c", tenant="", authenticated=True)
    cases: list[tuple[KeySet, dict[str, Any], Caller, str | None]] = [
        (public(A_KEY), {}, AGENT_A, INVALID_ACCEPTANCE),  # it publishes keys: must sign
        (KeySet(), {}, AGENT_A, None),  # no keys: its channel vouches for it
        (KeySet(), {}, stranger, NOT_A_PARTY),  # ... its own channel only
        (KeySet(), {"require_signed_acceptances": True}, AGENT_A, INVALID_ACCEPTANCE),
        (public(A_KEY), {"require_signed_acceptances": False}, AGENT_A, None),
        (  # the peer's own setting wins over [contracts]'
            public(A_KEY),
            {
                "require_signed_acceptances": True,
                "peers": {
                    "agent:a": Peer(
                        "agent:a", "https://a.example", require_signed_acceptances=False
                    )
                },
            },
            AGENT_A,
            None,
        ),
    ]
    for keys, settings, sender, code in cases:
        async with responder_service("memory://", B_KEY, keys, **settings) as service:
            notice = unsigned_proposal()
            if code is None:
                assert (await service.receive(notice, sender)).status == "pending"
                continue
            with pytest.raises(ContractRefusal) as refused:
                await service.receive(notice, sender)
            assert refused.value.code == code, (keys, settings, refused.value)
            if code == INVALID_ACCEPTANCE:
                assert "require_signed_acceptances" in refused.value.message
            assert await service.store.get("", notice.interaction_id) is None


async def test_messages_without_a_contract_never_reach_the_contract_store() -> None:
    async with responder_service("memory://", B_KEY, public(A_KEY)) as service:

        async def no_lookups(*args: Any) -> None:
            raise AssertionError("a message without a contract looked one up")

        service.store.get = no_lookups  # type: ignore[method-assign]
        message = Message(message_id="m1", role=Role.USER, parts=[Part(text="hi")])
        task = await service.engine.send_message(SendMessageRequest(message=message), AGENT_A)
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED


async def test_a_refused_message_stores_nothing() -> None:
    async with responder_service("memory://", B_KEY, public(A_KEY)) as service:
        document = await active(service)
        with pytest.raises(A2AError) as refused:
            await send(service, document, action="delete")
        assert refused.value.metadata["contractReason"] == "action_outside_contract"
        assert await service.engine.store.count_tasks("") == 0
        assert await service.store.bound_tasks("", document["interactionId"]) == []


async def test_the_harness_is_held_to_the_contract_like_any_agent() -> None:
    from accord.harness import Conversation, conversation_agent

    async def turn(conversation: Conversation) -> str:
        return f"answer to {conversation.text}"

    harness = conversation_agent(turn, agent_id="agent:b")
    async with responder_service("memory://", B_KEY, public(A_KEY), agent=harness) as service:
        document = await needing_approval(service)
        started = await send(service, document)
        assert isinstance(started, Task) and started.status.state is TaskState.INPUT_REQUIRED
        # A conversation parked between turns is parked again, for the approval.
        parked = await send(service, document, action="purchase", task_id=started.id)
        assert isinstance(parked, Task) and parked.status.state is TaskState.INPUT_REQUIRED
        assert parked.status.message is not None
        assert "awaiting a person's approval of 'purchase'" in parked.status.message.text()
        with pytest.raises(A2AError) as refused:
            await send(service, document, action="delete", task_id=started.id)
        assert refused.value.metadata["contractReason"] == "action_outside_contract"
        # A command names its action: "/browse …" asks for browse, "/delete" for delete.
        command = Message(
            message_id=str(uuid.uuid4()),
            role=Role.USER,
            parts=[Part(text="/delete everything")],
            metadata={TRUST_URI: Reference.of(document).metadata()},
        )
        with pytest.raises(A2AError) as refused:
            await service.engine.send_message(SendMessageRequest(message=command), AGENT_A)
        assert "'delete'" in refused.value.message


async def test_the_last_enforcement_decisions_are_kept_newest_first() -> None:
    async with responder_service("memory://", B_KEY, public(A_KEY)) as service:
        document = await needing_approval(service)
        interaction_id = document["interactionId"]
        done = await send(service, document)
        parked = await send(service, document, action="purchase")
        with pytest.raises(A2AError):
            await send(service, document, action="sell")
        assert isinstance(done, Task) and isinstance(parked, Task)
        shown = [d.as_json() for d in service.decisions.last("", interaction_id)]
        assert [(d["outcome"], d.get("taskId"), d["action"]) for d in shown] == [
            ("refused", None, "sell"),
            ("parked", parked.id, "purchase"),
            ("admitted", done.id, "browse"),
        ]
        assert shown[0]["code"] == "action_outside_contract"
        assert "not allowed" in shown[0]["reason"] and shown[0]["sender"] == "agent:a"
        assert service.decisions.last("other-tenant", interaction_id) == []
