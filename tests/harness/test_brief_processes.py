"""A task that names a parent is nobody's child unless the parent lists it, across a restart:
``accord serve`` on SQLite, stopped, its store holding two of alice's conversations that name
a parent — carol's conversation, and a task that does not exist (as a brief could make them
before the harness refused ``parent_tasks``) — and started again. Its follower's scan adopts
neither: no answer tells whether the named parent exists, and alice's completion reaches
nobody else's conversation."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.harness.harness_proc import HarnessServer, start, write_settings
from tests.waiting import eventually

from accord.core import agent as moves
from accord.store import open_store

pytestmark = pytest.mark.processes

TASK_KEY = "io.github.madarauchiha-314.tiny-harness/task"
STATUS_KEY = "io.github.madarauchiha-314.tiny-harness/status"
EVENT_MEDIA_TYPE = "application/vnd.tiny-harness.event+json"
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
CONTROL = {"data": {"kind": "control", "action": "complete"}, "mediaType": EVENT_MEDIA_TYPE}
TOLD_KEY = "accord.harness/sub_task"
NOT_FOLLOWED = "names a parent that does not list it: not followed"


def rpc(server: HarnessServer, who: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {**HEADERS, "X-Participant-Id": who}
    answer = httpx.post(server.url, json=body, headers=headers, timeout=30).json()
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def say(
    server: HarnessServer, who: str, parts: list[dict[str, Any]] | str, task_id: str = ""
) -> Any:
    if isinstance(parts, str):
        parts = [{"text": parts}]
    message: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": parts}
    if task_id:
        message["taskId"] = task_id
    return rpc(server, who, "SendMessage", {"message": message})["task"]


def get(server: HarnessServer, who: str, task_id: str) -> Any:
    return rpc(server, who, "GetTask", {"id": task_id})


def said(task: dict[str, Any]) -> str:
    return str(task["status"]["message"]["parts"][0]["text"])


def told(task: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages that told the task a sub-task of it ended."""
    return [m for m in task.get("history", []) if TOLD_KEY in m.get("metadata", {})]


async def name_parent(store_url: str, task_id: str, parent_id: str) -> None:
    """``task_id``'s extension, in the stopped server's store, naming ``parent_id`` as its
    parent (what a brief with ``parent_tasks`` stored before the harness refused it)."""
    store = open_store(store_url)
    await store.open()
    try:
        record = await store.get_task(task_id, None)
        assert record is not None
        metadata = dict(record.task.metadata)
        metadata[TASK_KEY] = {**metadata[TASK_KEY], "parent_tasks": [{"task_id": parent_id}]}
        outcome = moves.set_metadata(record, metadata, int(time.time() * 1000))
        assert outcome.record is not None
        await store.append(outcome.record, outcome.events, record.seq)
    finally:
        await store.close()


def test_a_task_naming_a_parent_is_adopted_only_when_the_parent_lists_it(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'tasks.db'}"
    config = write_settings(tmp_path)
    first = start(tmp_path, store_url, config, name="first", grpc=False)
    try:
        carols = say(first, "carol", "carol's own plans")
        named_real = say(first, "alice", "one")
        named_ghost = say(first, "alice", "two")
    finally:
        first.stop()
    asyncio.run(name_parent(store_url, named_real["id"], carols["id"]))
    asyncio.run(name_parent(store_url, named_ghost["id"], "0193-no-such-task"))

    server = start(tmp_path, store_url, config, name="second", grpc=False)
    try:
        # The follower's first scan has read both (or, as it once did, cancelled the one
        # whose parent does not exist).
        def scanned() -> bool:
            ghost = get(server, "alice", named_ghost["id"])
            parked = ghost["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            return server.log().count(NOT_FOLLOWED) == 2 or not parked

        eventually(scanned, "the follower's scan")
        real, ghost = (get(server, "alice", t["id"]) for t in (named_real, named_ghost))
        # No oracle: both stay open, parked as they were, whether the named parent exists.
        for task in (real, ghost):
            assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            assert task["metadata"][STATUS_KEY] == {"sub_state": "awaiting-next-message"}
        # Carol's conversation does not list alice's task, and alice's completion reaches
        # nobody else: both complete alike.
        carol_before = get(server, "carol", carols["id"])
        assert carol_before["metadata"][TASK_KEY]["sub_tasks"] == []
        done = [say(server, "alice", [CONTROL], t["id"]) for t in (named_real, named_ghost)]
        assert [(d["status"]["state"], said(d)) for d in done] == [
            ("TASK_STATE_COMPLETED", "completed by alice")
        ] * 2
        # A real sub-task's end, after those, is told to its parent: the follower has
        # caught up with alice's completions by then.
        parent = say(server, "alice", "a parent")
        say(server, "alice", "/sub-task a side chat", parent["id"])
        say(server, "alice", [CONTROL], f"{parent['id']}.1")
        eventually(lambda: told(get(server, "alice", parent["id"])), "the real parent told")
        carol_now = get(server, "carol", carols["id"])
        assert told(carol_now) == []
        assert said(carol_now) == said(carols)  # no turn ran on carol's conversation
        assert carol_now["history"] == carol_before["history"]
    finally:
        server.stop()
