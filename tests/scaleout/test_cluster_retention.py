"""Retention on two ``accord serve`` nodes sharing one PostgreSQL database: both sweep, each
ended task is deleted once (the nodes' counters add up to the number of ended tasks), with a
store extension's rows of it (a table neither node registered: the store recorded its
task_rows); live tasks and their rows are untouched."""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection
from pathlib import Path

import httpx
import pytest
from cluster import cluster
from tests.waiting import eventually

from accord.store import StoreExtension, TaskRows
from accord.store._postgres import PostgresStore

pytestmark = [pytest.mark.processes, pytest.mark.postgres]

ENDED = 40
A2A = {"A2A-Version": "1.0"}


class _Nothing:
    def forget_tasks(self, task_ids: Collection[str]) -> None:
        return None


NOTES = StoreExtension(
    name="retention_notes",
    memory=_Nothing,
    postgresql=[(1, ("CREATE TABLE retention_notes (task_id TEXT NOT NULL)",))],
    task_rows=(TaskRows("retention_notes"),),
)


def _send(url: str, text: str) -> str:
    body = {
        "message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"returnImmediately": text == "slow"},
    }
    answer = httpx.post(f"{url}/message:send", json=body, headers=A2A)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["task"]["id"])


def _deleted_by(url: str) -> int:
    metrics = httpx.get(f"{url}/metrics").text
    found = re.search(r"^accord_retention_deleted_tasks_total (\S+)$", metrics, re.M)
    assert found is not None, metrics
    return int(float(found.group(1)))


async def test_two_nodes_sweep_each_ended_task_once(pg_url: str, tmp_path: Path) -> None:
    # The feature's table, made (and its task_rows recorded) before the nodes start.
    store = PostgresStore(pg_url)
    access = store.extend(NOTES)
    await store.open()
    config = "retention_days = 0.00004\nretention_sweep_s = 0.05\n"  # 3.5 s; swept often
    try:
        with cluster(pg_url, tmp_path, size=2, config=config) as nodes:
            assert access.dialect == "postgresql"

            async def task(url: str, text: str) -> str:
                task_id = _send(url, text)  # a row of the feature's, long before the sweep
                await access.pool.execute("INSERT INTO retention_notes VALUES ($1)", task_id)
                return task_id

            live = [await task(nodes[0].url, "ask"), await task(nodes[1].url, "slow")]
            ended = [await task(nodes[i % 2].url, f"echo {i}") for i in range(ENDED)]

            def swept() -> bool:
                return sum(_deleted_by(node.url) for node in nodes) >= ENDED

            eventually(swept, "every ended task swept", timeout_s=60)
            # Each once: the two nodes' counts add up to the ended tasks, no more.
            assert sum(_deleted_by(node.url) for node in nodes) == ENDED
            for task_id in ended:
                answer = httpx.get(f"{nodes[0].url}/tasks/{task_id}", headers=A2A)
                assert answer.status_code == 404, answer.text
            left = await access.pool.fetch("SELECT task_id FROM retention_notes")
            assert sorted(row[0] for row in left) == sorted(live)
            states = [
                httpx.get(f"{nodes[1].url}/tasks/{task_id}", headers=A2A).json()["status"]["state"]
                for task_id in live
            ]
            assert states == ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING"]
            cancel = httpx.post(f"{nodes[1].url}/tasks/{live[1]}:cancel", json={}, headers=A2A)
            assert cancel.status_code == 200, cancel.text
    finally:
        await store.close()
