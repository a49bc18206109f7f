"""Contracts stored durably, on memory, SQLite and PostgreSQL alike: every move a
compare-and-swap on the version, one event per move; of an acceptance and a cancellation
racing, exactly one wins; records survive the store being closed and opened again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from accord.contracts import _lifecycle as lifecycle
from accord.contracts._errors import ContractRefusal
from accord.contracts._tables import ContractConflict, contract_store
from accord.contracts._wire import Notice
from accord.core._caller import Caller
from accord.store import open_store

from .contract_helpers import HOUR_MS, accepted, new_key, proposal, public, terms
from .service_helpers import now_ms, responder_service

A_KEY, B_KEY = new_key(), new_key()


async def test_writes_are_compare_and_swap(store_url: str) -> None:
    tasks = open_store(store_url)
    store = contract_store(tasks)  # (before the store opens: it brings the tables)
    await tasks.open()
    try:
        record, event = lifecycle.propose(
            proposal(A_KEY), tenant="t", local_agent="agent:b", now_ms=now_ms()
        )
        await store.create(record, event, due_ms=record.expires_ms)
        with pytest.raises(ContractConflict):
            await store.create(record, event, due_ms=None)
        assert await store.get("other-tenant", record.interaction_id) is None
        acceptance = accepted(record.document, B_KEY, now_ms())
        first = lifecycle.accept(record, acceptance, by="agent:b", now_ms=now_ms())
        second = lifecycle.reject(record, by="agent:b", reason="no", now_ms=now_ms())
        await store.replace(first[0], 1, first[1], due_ms=None)
        with pytest.raises(ContractConflict) as lost:
            await store.replace(second[0], 1, second[1], due_ms=None)
        assert (lost.value.expected, lost.value.actual) == (1, 2)
        stored = await store.get("t", record.interaction_id)
        assert stored is not None and (stored.status, stored.version) == ("active", 2)
        assert [e.kind for e in await store.events("t", record.interaction_id)] == [
            "proposed",
            "accepted",
        ]
    finally:
        await tasks.close()


async def test_the_sweeper_finds_what_is_due_and_lists_are_per_tenant(store_url: str) -> None:
    tasks = open_store(store_url)
    store = contract_store(tasks)  # (before the store opens: it brings the tables)
    await tasks.open()
    try:
        base = now_ms()
        ids = []
        for index in range(3):
            contract = terms(interactionId=f"11111111-1111-4111-8111-11111111111{index}")
            record, event = lifecycle.propose(
                proposal(A_KEY, contract=contract, now_ms=base + index),
                tenant="t",
                local_agent="agent:b",
                now_ms=base,
            )
            await store.create(record, event, due_ms=base + index * HOUR_MS)
            ids.append(record.interaction_id)
        due = await store.due(base + HOUR_MS, 10)
        assert [r.interaction_id for r in due] == ids[:2]
        page = await store.list_contracts("t", None, 2, "")
        assert [r.interaction_id for r in page] == [ids[2], ids[1]]  # newest first
        rest = await store.list_contracts("t", None, 2, page[-1].interaction_id)
        assert [r.interaction_id for r in rest] == [ids[0]]
        assert await store.list_contracts("t", "active", 10, "") == []
        assert await store.list_contracts("u", None, 10, "") == []
        await store.bind_task("t", ids[0], "task-1")
        await store.bind_task("t", ids[0], "task-1")  # (twice: once)
        assert await store.bound_tasks("t", ids[0]) == ["task-1"]
        assert await store.bindings(10, ("", "", "")) == [("t", ids[0], "task-1")]
    finally:
        await tasks.close()


async def test_records_survive_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tasks.db'}"
    tasks = open_store(url)
    store = contract_store(tasks)
    await tasks.open()
    record, event = lifecycle.propose(
        proposal(A_KEY), tenant="t", local_agent="agent:b", now_ms=now_ms()
    )
    await store.create(record, event, due_ms=None)
    await tasks.close()
    again = open_store(url)
    store = contract_store(again)
    await again.open()
    try:
        found = await store.get("t", record.interaction_id)
        assert found == record
    finally:
        await again.close()


async def test_accept_racing_withdrawal_exactly_one_wins(store_url: str) -> None:
    """The responder's operator accepts while the initiator's withdrawal arrives: on every
    store, one of the two moves wins and the other is refused, never both."""
    sender = Caller(identity="agent:a", tenant="", authenticated=True)
    async with responder_service(store_url, B_KEY, public(A_KEY)) as service:
        outcomes = []
        for index in range(12):
            contract = terms(interactionId=f"11111111-1111-4111-8111-{index:012d}")
            document = proposal(A_KEY, contract=contract, now_ms=now_ms())
            await service.receive(Notice("proposal", document["interactionId"], document), sender)
            withdrawal = Notice("withdrawal", document["interactionId"], reason="changed my mind")
            moves = [
                service.accept("", document["interactionId"]),
                service.receive(withdrawal, sender),
            ]
            if index % 2:
                moves.reverse()
            results = await asyncio.gather(*moves, return_exceptions=True)
            won = [r for r in results if not isinstance(r, BaseException)]
            lost = [r for r in results if isinstance(r, BaseException)]
            assert len(won) == 1 and len(lost) == 1, results
            assert isinstance(lost[0], ContractRefusal) and lost[0].code == "contract_conflict"
            final = await service.get("", document["interactionId"])
            assert final.status == won[0].status
            kinds = [e.kind for e in await service.events("", document["interactionId"])]
            assert ("accepted" in kinds) != ("withdrawn" in kinds)
            outcomes.append(final.status)
    assert set(outcomes) <= {"active", "cancelled"}


async def test_two_nodes_writing_the_same_version_on_postgresql_exactly_one_wins(
    pg_url: str,
) -> None:
    """Two stores (two nodes' pools) on one database each write a move over the same
    version at once: one write lands, the other is refused."""
    one, two = open_store(pg_url), open_store(pg_url)
    first, second = contract_store(one), contract_store(two)
    await one.open()
    await two.open()
    try:
        for index in range(12):
            contract = terms(interactionId=f"11111111-1111-4111-8111-{index:012d}")
            record, event = lifecycle.propose(
                proposal(A_KEY, contract=contract), tenant="t", local_agent="agent:b",
                now_ms=now_ms(),
            )  # fmt: skip
            await first.create(record, event, due_ms=None)
            accept = lifecycle.accept(
                record, accepted(record.document, B_KEY, now_ms()), by="agent:b", now_ms=now_ms()
            )
            reject = lifecycle.reject(record, by="agent:b", reason="", now_ms=now_ms())
            results = await asyncio.gather(
                first.replace(accept[0], 1, accept[1], due_ms=None),
                second.replace(reject[0], 1, reject[1], due_ms=None),
                return_exceptions=True,
            )
            assert sorted(type(r).__name__ for r in results) == ["ContractConflict", "NoneType"]
            kinds = [e.kind for e in await second.events("t", record.interaction_id)]
            assert len(kinds) == 2 and kinds[0] == "proposed"
    finally:
        await one.close()
        await two.close()
