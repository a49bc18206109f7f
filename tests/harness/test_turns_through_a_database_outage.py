"""``accord serve --agent harness`` on PostgreSQL, reached through a proxy the test cuts for
a few seconds while model turns stream their answers (as a stopped database, or a network
blip, would): every turn in flight — and the turn of a message stored just before the cut —
goes on as soon as the database is back, not at the next recovery sweep (30 s), with its
answer given once and no model call made twice."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.cuttable_proxy import CuttableProxy
from tests.harness.fake_openai import FakeOpenAI, Reply
from tests.harness.harness_proc import HarnessServer, start

pytestmark = pytest.mark.processes  # accord serve nodes

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json", "X-Participant-Id": "alice"}
PG_ADDRESS = "127.0.0.1:5432"
WORDS = 10  # chunks of each answer, 0.2 s apart
OUTAGE_S = 3.0


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def answer(n: int) -> str:
    return f"answer {n}:" + " word" * (WORDS - 1)


def send(server: HarnessServer, text: str) -> str:
    """SendMessage with returnImmediately: the new task's id."""
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": message, "configuration": {"returnImmediately": True}},
    }
    reply = httpx.post(server.url, json=body, headers=HEADERS, timeout=30).json()
    assert "result" in reply, reply
    return str(reply["result"]["task"]["id"])


def get(server: HarnessServer, task_id: str) -> dict[str, Any] | None:
    """The task, or None while the server cannot answer (the database is away)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    try:
        reply = httpx.post(server.url, json=body, headers=HEADERS, timeout=10).json()
    except httpx.HTTPError:
        return None
    task: dict[str, Any] | None = reply.get("result")
    return task


def test_turns_in_flight_when_the_database_goes_away_go_on_as_soon_as_it_is_back(
    tmp_path: Path, pg_url: str, fake: FakeOpenAI
) -> None:
    for n in range(4):
        words = [f"answer {n}:", *[" word"] * (WORDS - 1)]
        fake.replies.append(Reply(words, pause_s=0.2))
    config = tmp_path / "harness.toml"
    config.write_text(
        '[harness]\nmodel = "openai:fake-model"\n'
        f'[harness.openai]\nbase_url = "{fake.base_url}"\napi = "chat"\n'
    )
    with CuttableProxy(5432) as proxy:
        server = start(tmp_path, proxy.dsn(pg_url, PG_ADDRESS), config, grpc=False)
        try:
            tasks = [send(server, f"question {n}") for n in range(3)]
            deadline = time.monotonic() + 30
            while len(fake.requests) < 3:  # the three turns are asking the model
                assert time.monotonic() < deadline, "the turns did not start"
                time.sleep(0.02)
            tasks.append(send(server, "question 3"))
            time.sleep(0.1)  # (stored 100 ms before the database goes away)
            proxy.cut()
            time.sleep(OUTAGE_S)
            proxy.restore()
            restored = time.monotonic()

            parked: dict[str, float] = {}
            found: dict[str, dict[str, Any]] = {}
            deadline = restored + 15  # the sweep would come ~30 s after the restore
            while len(parked) < len(tasks):
                assert time.monotonic() < deadline, f"turns still running: {found}"
                for task_id in tasks:
                    task = get(server, task_id)
                    if task is not None and task_id not in parked:
                        found[task_id] = task["status"]
                        if task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED":
                            parked[task_id] = time.monotonic() - restored
                            found[task_id] = task
                time.sleep(0.05)
        finally:
            server.stop()
    said = sorted(t["status"]["message"]["parts"][0]["text"] for t in found.values())
    assert said == sorted(answer(n) for n in range(4))
    for task in found.values():  # each answer given once
        answers = [m for m in task["history"] if m["role"] == "ROLE_AGENT"]
        assert len(answers) == 1, answers
    assert len(fake.requests) == 4  # no model call made twice
    print(f"turns parked {min(parked.values()):.2f}-{max(parked.values()):.2f} s after the restore")
