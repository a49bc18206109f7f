"""Conversations across processes: ``kill -9`` of a server with conversations parked, and two
``accord serve`` nodes on one PostgreSQL database (a conversation parked on one continues on
the other; a completion sent to one cuts a turn running on the other)."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.harness.harness_proc import HarnessServer, start, write_settings
from tests.marks import POSTGRES
from tests.waiting import eventually

pytestmark = pytest.mark.processes

STATUS_KEY = "io.github.madarauchiha-314.tiny-harness/status"
TASK_KEY = "io.github.madarauchiha-314.tiny-harness/task"
EVENT_MEDIA_TYPE = "application/vnd.tiny-harness.event+json"
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
CONTROL = {"data": {"kind": "control", "action": "complete"}, "mediaType": EVENT_MEDIA_TYPE}


def rpc(server: HarnessServer, who: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer = httpx.post(
        server.url, json=body, headers={**HEADERS, "X-Participant-Id": who}, timeout=30
    ).json()
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def say(
    server: HarnessServer, who: str, parts: list[dict[str, Any]] | str, task_id: str = ""
) -> dict[str, Any]:
    if isinstance(parts, str):
        parts = [{"text": parts}]
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": parts}
    if task_id:
        message["taskId"] = task_id
    task: dict[str, Any] = rpc(server, who, "SendMessage", {"message": message})["task"]
    return task


def get(server: HarnessServer, who: str, task_id: str) -> dict[str, Any]:
    return rpc(server, who, "GetTask", {"id": task_id})


def brief(roles: dict[str, str], **fields: Any) -> dict[str, Any]:
    people = [{"id": who, "kind": "human", "role": role} for who, role in roles.items()]
    payload = {"name": "n", "goal": "g", "participants": people, **fields}
    return {"data": {"kind": "task", "payload": payload}, "mediaType": EVENT_MEDIA_TYPE}


def status_text(task: dict[str, Any]) -> str:
    return str(task["status"]["message"]["parts"][0]["text"])


def roles(task: dict[str, Any]) -> dict[str, str]:
    return {p["id"]: p["role"] for p in task["metadata"][TASK_KEY]["participants"]}


def test_kill_9_keeps_every_parked_conversation(tmp_path: Path) -> None:
    config = write_settings(tmp_path)
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    server = start(tmp_path, store, config, name="first", grpc=False)
    try:
        plain = say(server, "alice", "hello")
        briefed = say(server, "bob", [{"text": "plan"}, brief({"carol": "watcher"})])
        two_turns = say(server, "dave", "one")
        two_turns = say(server, "dave", "two", two_turns["id"])
        before = {
            who: get(server, who, task["id"])
            for who, task in (("alice", plain), ("bob", briefed), ("dave", two_turns))
        }
    finally:
        server.kill()
    server = start(tmp_path, store, config, name="second", grpc=False)
    try:
        for who, task in before.items():
            after = get(server, who, task["id"])
            assert after["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            assert after["metadata"][STATUS_KEY] == {"sub_state": "awaiting-next-message"}
            assert after["metadata"] == task["metadata"]
            assert after["history"] == task["history"]
        assert roles(before["bob"]) == {"carol": "watcher", "accord": "assignee", "bob": "reporter"}
        assert get(server, "carol", briefed["id"])["id"] == briefed["id"]
        # The conversations go on where they stopped (the model's place is in the log).
        assert status_text(say(server, "dave", "three", two_turns["id"])) == "answer 3"
        assert status_text(say(server, "alice", "again", plain["id"])) == "answer 2"
        done = say(server, "bob", [CONTROL], briefed["id"])
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        server.stop()


@pytest.mark.parametrize("store_kind", ["sqlite", POSTGRES])
def test_kill_9_between_a_messages_append_and_its_turn_runs_the_turn_once_after_restart(
    tmp_path: Path, store_kind: str, request: pytest.FixtureRequest
) -> None:
    """A plain message to a parked conversation stored, then ``kill -9`` before its turn
    started (the test-only stall holds it): the restarted server runs its turn without
    waiting for another message, once; a further restart runs nothing again."""
    config = write_settings(tmp_path)
    store = (
        f"sqlite:///{tmp_path / 'tasks.db'}"
        if store_kind == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    stalled = {"ACCORD_TEST_STALL_TURN_START": "1"}
    server = start(tmp_path, store, config, name="first", grpc=False, env=stalled)
    try:
        task = say(server, "alice", "hello")  # (a new conversation's turn: not stalled)
        assert status_text(task) == "answer 1"
        message = {
            "messageId": uuid.uuid4().hex,
            "role": "ROLE_USER",
            "parts": [{"text": "are you there?"}],
            "taskId": task["id"],
        }
        params = {"message": message, "configuration": {"returnImmediately": True}}
        rpc(server, "alice", "SendMessage", params)
        stored = get(server, "alice", task["id"])
        assert stored["history"][-1]["messageId"] == message["messageId"]  # stored, no turn
        assert stored["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert status_text(stored) == "answer 1"
    finally:
        server.kill()
    for round_ in (2, 3):  # restarted; then once more, with nothing owed
        server = start(tmp_path, store, config, name=f"run-{round_}", grpc=False)
        try:
            after = eventually(
                lambda s=server: answered(get(s, "alice", task["id"]), "answer 2"),
                "the owed turn to run",
            )
            assert after["metadata"][STATUS_KEY] == {"sub_state": "awaiting-next-message"}
            time.sleep(0.5)  # a window: a second turn, were one started, would answer in it
            history = get(server, "alice", task["id"])["history"]
            answers = [m["parts"][0]["text"] for m in history if m["role"] == "ROLE_AGENT"]
            assert answers == ["answer 1", "answer 2"]  # its turn, once
        finally:
            server.kill() if round_ == 2 else server.stop()


def test_kill_9_before_a_turns_first_commit_loses_only_an_unanswered_message(
    tmp_path: Path,
) -> None:
    """On one node a blocking message to a parked conversation is stored with its turn's
    first move (WORKING), not before the turn: ``kill -9`` while the turn is held before that
    move leaves the conversation as it was (the message was never acknowledged, nor is it
    owed), and the client's retry of the same message runs its turn, once."""
    config = write_settings(tmp_path)
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    stalled = {"ACCORD_TEST_STALL_TURN_START": "1"}
    server = start(tmp_path, store, config, name="first", grpc=False, env=stalled)
    message_id = uuid.uuid4().hex
    try:
        task = say(server, "alice", "hello")
        before = get(server, "alice", task["id"])
        message = {
            "messageId": message_id,
            "role": "ROLE_USER",
            "parts": [{"text": "are you there?"}],
            "taskId": task["id"],
        }
        sending = threading.Thread(target=_unanswered, args=(server, message), daemon=True)
        sending.start()
        eventually(lambda: f"turn of message {message_id} stalled" in server.log(), "the stall")
        shown = get(server, "alice", task["id"])
        assert shown["history"] == before["history"]  # not shown: not durable yet
    finally:
        server.kill()
    sending.join(10)
    server = start(tmp_path, store, config, name="second", grpc=False)
    try:
        after = get(server, "alice", task["id"])
        assert after["history"] == before["history"]
        assert after["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        retried = rpc(server, "alice", "SendMessage", {"message": message})["task"]
        assert status_text(retried) == "answer 2"
        history = get(server, "alice", task["id"])["history"]
        answers = [m["parts"][0]["text"] for m in history if m["role"] == "ROLE_AGENT"]
        assert answers == ["answer 1", "answer 2"]
        assert [m["messageId"] for m in history].count(message_id) == 1
    finally:
        server.stop()


def _unanswered(server: HarnessServer, message: dict[str, Any]) -> None:
    """A blocking SendMessage whose server dies before it answers."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    with contextlib.suppress(httpx.HTTPError):
        httpx.post(server.url, json=body, headers={**HEADERS, "X-Participant-Id": "alice"})


@pytest.fixture
def two_nodes(pg_url: str, tmp_path: Path) -> Iterator[tuple[HarnessServer, HarnessServer]]:
    config = write_settings(tmp_path)
    a = start(tmp_path, pg_url, config, name="a", grpc=False, agent="harness_agents:agent")
    try:
        b = start(tmp_path, pg_url, config, name="b", grpc=False, agent="harness_agents:agent")
        try:
            yield a, b
        finally:
            b.stop()
    finally:
        a.stop()


def test_a_conversation_parked_on_one_node_continues_on_another(
    two_nodes: tuple[HarnessServer, HarnessServer],
) -> None:
    a, b = two_nodes
    task = say(a, "alice", [{"text": "hello"}, brief({"bob": "watcher"})])
    assert status_text(task) == "answer to hello"
    on_b = say(b, "alice", "and then", task["id"])
    assert on_b["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert status_text(on_b) == "answer to and then"
    assert on_b["metadata"][STATUS_KEY] == {"sub_state": "awaiting-next-message"}
    # The boundary holds on either node.
    assert get(b, "bob", task["id"])["id"] == task["id"]
    stranger = httpx.post(
        b.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task["id"]}},
        headers={**HEADERS, "X-Participant-Id": "mallory"},
    ).json()
    assert stranger["error"]["code"] == -32001


class Background:
    """A blocking SendMessage running in a thread (its answer, once it comes)."""

    def __init__(self, server: HarnessServer, who: str, text: str, task_id: str) -> None:
        self.answer: dict[str, Any] | None = None
        self.thread = threading.Thread(target=self._run, args=(server, who, text, task_id))
        self.thread.start()

    def _run(self, server: HarnessServer, who: str, text: str, task_id: str) -> None:
        self.answer = say(server, who, text, task_id)

    def result(self, timeout: float) -> dict[str, Any]:
        self.thread.join(timeout)
        assert self.answer is not None, "the request did not end"
        return self.answer


def answered(task: dict[str, Any], text: str) -> dict[str, Any] | None:
    """The task if its status message says ``text``."""
    return task if status_text(task) == text else None


def wait_for_state(server: HarnessServer, who: str, task_id: str, state: str) -> None:
    eventually(
        lambda: get(server, who, task_id)["status"]["state"] == state,
        f"the task to become {state}",
        timeout_s=10,
    )


def test_a_completion_sent_to_one_node_cuts_the_turn_running_on_another(
    two_nodes: tuple[HarnessServer, HarnessServer],
) -> None:
    a, b = two_nodes
    task = say(a, "alice", "hello")
    running = Background(a, "alice", "think 60", task["id"])  # a minute-long turn on A
    wait_for_state(a, "alice", task["id"], "TASK_STATE_WORKING")
    started = time.monotonic()
    done = say(b, "alice", [CONTROL], task["id"])
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert status_text(done) == "completed by alice"
    # The turn on A was cut (not waited for): its client's request ends with the completion.
    cut = running.result(timeout=20)
    assert time.monotonic() - started < 30
    assert cut["status"]["state"] == "TASK_STATE_COMPLETED"
    history = [p.get("text") for m in get(a, "alice", task["id"])["history"] for p in m["parts"]]
    assert "answer to think 60" not in history


def test_a_refused_completion_on_one_node_also_cuts_the_turn_on_another(
    two_nodes: tuple[HarnessServer, HarnessServer],
) -> None:
    a, b = two_nodes
    task = say(a, "alice", [{"text": "hello"}, brief({})])
    say(a, "alice", "/sub-task a side chat", task["id"])  # a sub-task, open
    refusal = f"completion refused: unresolved sub-tasks: {task['id']}.1"
    running = Background(a, "alice", "think 3", task["id"])  # a three-second turn on A
    wait_for_state(a, "alice", task["id"], "TASK_STATE_WORKING")
    kept = say(b, "alice", [CONTROL], task["id"])
    assert kept["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert status_text(kept) == refusal
    cut = running.result(timeout=20)
    assert status_text(cut) == refusal
    # Long after A's turn would have answered, it has not: it stopped when B parked the task.
    time.sleep(4)  # a window: the 3 s turn, had it gone on, would have answered in it
    after = get(a, "alice", task["id"])
    assert status_text(after) == refusal
    texts = [p.get("text") for m in after["history"] for p in m["parts"]]
    assert "answer to think 3" not in texts
