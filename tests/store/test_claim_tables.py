"""Remote workers' claims, against both claim tables: the in-process one (one node) and the
PostgreSQL one, where each "node" is its own store with its own pool on one database. The
same behaviour is expected from both; only PostgreSQL shares it between nodes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from tests.marks import POSTGRES

from accord.core._caller import Caller
from accord.core._records import TaskRecord
from accord.engine import Engine, EngineConfig
from accord.engine._remote import LEASE_EXPIRED_MESSAGE, Claims
from accord.store import MemoryStore, TaskStore
from accord.store._claims import Claim, ClaimTable, LocalClaimTable
from accord.store._pg_claims import PgClaimTable
from accord.store._postgres import PostgresStore
from accord.wire._model import TaskState

from .records import commit, moved, new_task

LEASE = 1000
WORKER = Caller(identity="worker", tenant="t1", authenticated=True)


@dataclass
class Cluster:
    """Nodes sharing what a deployment would share: one database, or one process's table."""

    stores: list[TaskStore]
    tables: list[ClaimTable]
    now: list[int] = field(default_factory=lambda: [10_000])

    def clock(self) -> int:
        return self.now[0]

    def claims(self) -> list[Claims]:
        """One Claims per node, each on its own engine, all on the test's clock."""
        return [
            Claims(Engine(s, _no_agent, EngineConfig(resumable=True), clock=self.clock), LEASE,
                   self.clock, t)
            for s, t in zip(self.stores, self.tables, strict=True)
        ]  # fmt: skip


async def _no_agent(ctx: object, task: object) -> None:
    raise AssertionError("remote mode runs no agent")


@pytest.fixture(params=["local", POSTGRES])
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    if request.param == "local":
        store = MemoryStore()
        table = LocalClaimTable()
        await store.open()
        yield Cluster([store, store], [table, table])
        await store.close()
        return
    url = request.getfixturevalue("pg_url")
    stores = [PostgresStore(url), PostgresStore(url)]
    for store in stores:
        await store.open()
    yield Cluster(list(stores), [PgClaimTable(lambda s=s: s.pool) for s in stores])
    for store in stores:
        await store.close()


async def working_task(store: TaskStore, task_id: str) -> TaskRecord:
    record = await new_task(store, task_id)
    return await commit(store, record, moved(record, "work", 2000))


async def failed_statuses(store: TaskStore, task_id: str) -> list[str]:
    events = await store.read_events(task_id, 0)
    texts = []
    for event in events:
        status = getattr(event.body, "status", None)
        if event.kind == "status" and status is not None and status.state == TaskState.FAILED:
            texts.append(status.message.parts[0].text)
    return texts


# --- the tables ---------------------------------------------------------------------------


async def test_racing_claimers_on_two_nodes_get_one_claim(cluster: Cluster) -> None:
    a, b = cluster.tables
    grants = await asyncio.gather(
        *(
            table.grant("task-1", "t1", f"worker-{i}", 10_000, 10_000 + LEASE)
            for i, table in enumerate([a, b] * 5)
        )
    )
    outcomes = sorted(outcome for outcome, _ in grants)
    assert outcomes == ["claimed"] + ["held"] * 9
    winner = next(claim for outcome, claim in grants if outcome == "claimed")
    assert winner is not None
    assert await b.holder("task-1") == await a.holder("task-1") == winner.holder
    for outcome, claim in grants:
        if outcome == "held":
            assert claim is not None and claim.holder == winner.holder


async def test_the_holder_renews_and_an_expired_claim_goes_to_another(cluster: Cluster) -> None:
    a, b = cluster.tables
    assert (await a.grant("task-1", "t1", "w1", 10_000, 11_000))[0] == "claimed"
    outcome, claim = await b.grant("task-1", "t1", "w1", 10_500, 11_500)
    assert outcome == "renewed" and claim is not None and claim.expires_ms == 11_500
    assert (await b.grant("task-1", "t1", "w2", 11_499, 12_499))[0] == "held"
    outcome, claim = await b.grant("task-1", "t1", "w2", 11_500, 12_500)
    assert outcome == "claimed" and claim == Claim("task-1", "t1", "w2", 12_500)
    assert (await a.grant("task-1", "t1", "w1", 11_600, 12_600))[0] == "held"
    await a.renew("task-1", 20_000)  # an agent command renews, whoever sent it
    assert (await b.grant("task-1", "t1", "w1", 15_000, 16_000))[0] == "held"
    await a.release("task-1")  # the turn ended
    assert await b.holder("task-1") is None
    assert (await b.grant("task-1", "t1", "w1", 15_000, 16_000))[0] == "claimed"


async def test_a_turn_end_releases_only_claims_from_before_it(cluster: Cluster) -> None:
    """The release after a turn-ending command is a step of its own: a worker that claims the
    task's next turn in between keeps its claim when the late release arrives."""
    a, b = cluster.tables
    assert (await a.grant("task-1", "t1", "w1", 10_000, 10_000 + LEASE))[0] == "claimed"
    await a.renew("task-1", 10_400 + LEASE)  # an agent command at 10,400 renews it
    # The turn ends at 10,500: its release takes the claim granted or renewed before then.
    await a.release("task-1", lease_ends_by=10_500 + LEASE)
    assert await b.holder("task-1") is None
    # w2 claims the next turn at 10,600; a release of that earlier turn end that arrives only
    # now (it was on its way from another node) must not take w2's claim.
    assert (await b.grant("task-1", "t1", "w2", 10_600, 10_600 + LEASE))[0] == "claimed"
    await a.release("task-1", lease_ends_by=10_500 + LEASE)
    assert await b.holder("task-1") == "w2"
    await a.release("task-1")  # unconditional (the task is terminal or gone)
    assert await b.holder("task-1") is None


async def test_adopted_claims_go_to_the_first_worker_and_never_replace_one(
    cluster: Cluster,
) -> None:
    a, b = cluster.tables
    await a.grant("task-1", "t1", "w1", 10_000, 11_000)
    adopted = await b.adopt([Claim("task-1", "t1", "", 12_000), Claim("task-2", "t1", "", 12_000)])
    assert adopted == 1
    assert await a.holder("task-1") == "w1"
    assert await a.holder("task-2") == ""
    assert (await a.grant("task-2", "t1", "w2", 10_100, 11_100))[0] == "claimed"
    assert (await b.grant("task-2", "t1", "w3", 10_200, 11_200))[0] == "held"


async def test_each_expired_claim_goes_to_one_reaper_and_returns_if_it_dies(
    cluster: Cluster,
) -> None:
    a, b = cluster.tables
    for i in range(30):
        await a.grant(f"task-{i}", "t1", "w", 10_000, 10_000 + LEASE + (i % 2) * 5000)
    taken = await asyncio.gather(
        *(t.take_expired(11_000, f"reaper-{i}", 12_000, 4) for i, t in enumerate([a, b] * 5))
    )
    ids = [c.task_id for batch in taken for c in batch]
    assert sorted(ids) == sorted(f"task-{i}" for i in range(0, 30, 2))  # each exactly once
    # Taken: nobody claims it, and agent commands do not keep it alive.
    first = next(batch[0] for batch in taken if batch)
    assert (await b.grant(first.task_id, "t1", "w", 11_500, 12_500))[0] == "held"
    await b.renew(first.task_id, 50_000)
    # Its reaper died before deleting it: once the reaper's lease ends, another takes it.
    assert await b.take_expired(11_999, "reaper-x", 13_000, 100) == []
    again = await b.take_expired(12_000, "reaper-x", 13_000, 100)
    assert first.task_id in [c.task_id for c in again]
    await a.reaped(first)  # the dead reaper's late delete leaves the new reaper's row
    assert await a.holder(first.task_id) == "w"
    for claim in again:
        await b.reaped(claim)
    assert await a.holder(first.task_id) is None


# --- the policy on top: Claims ---------------------------------------------------------------


async def test_two_nodes_reaping_together_fail_each_expired_task_once(cluster: Cluster) -> None:
    node_a, node_b = cluster.claims()
    ids = [f"task-{i}" for i in range(12)]
    for task_id in ids:
        await working_task(cluster.stores[0], task_id)
        assert (await node_a.claim(task_id, WORKER, "w1")).outcome == "claimed"
    assert (await node_b.claim(ids[0], WORKER, "w2")).outcome == "held"
    # a turn that ended (now) releases the claim
    await node_b.touched(ids[1], TaskState.COMPLETED, cluster.clock())

    cluster.now[0] += LEASE
    failed = await asyncio.gather(node_a.reap(), node_b.reap(), node_a.reap(), node_b.reap())
    assert sum(failed) == len(ids) - 1
    for task_id in ids:
        expected = [] if task_id == ids[1] else [LEASE_EXPIRED_MESSAGE]
        assert await failed_statuses(cluster.stores[1], task_id) == expected
        assert await node_a.holder(task_id) is None
    assert await node_b.reap() == 0


async def test_adoption_gives_only_unclaimed_working_tasks_a_holderless_claim(
    cluster: Cluster,
) -> None:
    node_a, node_b = cluster.claims()
    await working_task(cluster.stores[0], "claimed")
    await working_task(cluster.stores[0], "orphan")  # moved to WORKING without a claim
    assert (await node_a.claim("claimed", WORKER, "w1")).outcome == "claimed"
    cluster.now[0] += LEASE // 2
    assert await node_b.adopt_running() == 1  # only the task with no claim
    assert await node_b.holder("claimed") == "worker/w1"
    assert (await node_b.claim("claimed", WORKER, "w2")).outcome == "held"
    assert (await node_a.claim("orphan", WORKER, "w2")).outcome == "claimed"


async def test_retention_deletes_a_claim_left_on_a_deleted_task(pg_url: str) -> None:
    """A claim can outlive its task's turn (a client canceled the task): on PostgreSQL the
    row is in the database, and retention deletes it with the task."""
    store = PostgresStore(pg_url)
    await store.open()
    try:
        table = PgClaimTable(lambda: store.pool)
        canceled = await working_task(store, "canceled")
        await working_task(store, "working")
        for task_id in ("canceled", "working"):
            assert (await table.grant(task_id, "t1", "w", 2000, 9_000_000))[0] == "claimed"
        await commit(store, canceled, moved(canceled, "cancel", 2001))
        assert await store.delete_terminal_before(5000) == 1
        assert await table.holder("canceled") is None
        assert await table.holder("working") == "w"
    finally:
        await store.close()
