"""Delegation between real processes, authentication on: a harness on A delegates to a
harness on B over each binding (JSON-RPC, HTTP+JSON, gRPC), B's child asks a question that
reaches A's participant and takes the answer back, then completes, and A's parent resumes
with its result; ``kill -9`` of A while it waits, and B down for a while; the official SDK's
server as the remote agent; cancelling A's parent cancels the task on the remote agent, and
the parent's references to its children (on B, and a local ``/sub-task``) end with them."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.harness.delegation_proc import (
    A_ENV,
    ALICE,
    a_config,
    b_config,
    card_server,
    rpc,
)
from tests.harness.harness_proc import HarnessServer, start
from tests.processes import free_port
from tests.waiting import eventually

from sdk_servers.fixtures import sdk_echo_server

pytestmark = pytest.mark.processes

EVENT_MEDIA_TYPE = "application/vnd.tiny-harness.event+json"
STATUS_KEY = "io.github.madarauchiha-314.tiny-harness/status"
TASK_KEY = "io.github.madarauchiha-314.tiny-harness/task"
REMOTE_KEY = "accord.harness/subtask"
B_AS_A = {"X-API-Key": "a-at-b-key-0123456789"}


def spawn_call(name: str, goal: str, agent: str | None) -> dict[str, Any]:
    return {"name": "spawn_subtask", "arguments": {"name": name, "goal": goal, "agent": agent}}


def brief(**payload: Any) -> dict[str, Any]:
    data = {"kind": "task", "payload": {"name": "offsite", "goal": "a plan", **payload}}
    return {"data": data, "mediaType": EVENT_MEDIA_TYPE}


def send(url: str, parts: list[dict[str, Any]], task_id: str = "") -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": parts}
    if task_id:
        message["taskId"] = task_id
    result: dict[str, Any] = rpc(url, "SendMessage", {"message": message}, ALICE)["task"]
    return result


def get(url: str, task_id: str, headers: dict[str, str] = ALICE) -> dict[str, Any]:
    task: dict[str, Any] = rpc(url, "GetTask", {"id": task_id}, headers)
    return task


def sub_state(task: dict[str, Any]) -> str | None:
    value = task.get("metadata", {}).get(STATUS_KEY)
    return value.get("sub_state") if isinstance(value, dict) else None


def said(task: dict[str, Any]) -> str:
    parts = task["status"].get("message", {}).get("parts", [])
    return "\n".join(p["text"] for p in parts if "text" in p)


def refs(task: dict[str, Any]) -> list[tuple[str, str | None, str | None]]:
    return [
        (r["task_id"], (r.get("agent") or {}).get("id"), r.get("state"))
        for r in task["metadata"][TASK_KEY]["sub_tasks"]
    ]


def told(task: dict[str, Any]) -> list[str]:
    """The texts of the messages that told the task its sub-tasks ended."""
    return [
        "\n".join(p.get("text", "") for p in m["parts"])
        for m in task.get("history", [])
        if "accord.harness/sub_task" in m.get("metadata", {})
    ]


def relayed_answer(parent: dict[str, Any], child: str) -> str:
    """Alice's answer to the question ``child`` asked, as the parent holds it."""
    requests = parent["metadata"]["accord.harness/channels"]["requests"]
    [answered_by] = [r["answered_by"] for r in requests if r["relay"].startswith(child + "#")]
    [reply] = [m for m in parent["history"] if m["messageId"] == answered_by]
    text: str = reply["parts"][0]["text"]
    return text


def remote_of(a: HarnessServer, child_id: str) -> dict[str, Any]:
    info: dict[str, Any] = get(a.url, child_id)["metadata"][REMOTE_KEY]["remote"]
    return info


ASK_A = {"name": "ask_participant",
         "arguments": {"participant_id": "accord-a", "question": "Which city?"}}  # fmt: skip
B_SCRIPT = [{"text": "", "tool_calls": [ASK_A]}, {"text": "Booked in the city you chose."}]


def test_a_delegates_to_b_over_every_binding_and_the_question_and_answer_cross(
    tmp_path: Path,
) -> None:
    b = start(tmp_path, f"sqlite:///{tmp_path / 'b.db'}", b_config(tmp_path, B_SCRIPT), name="b")
    a = None
    try:
        with card_server() as cards:
            agents = {
                f"b-{binding.lower().replace('+', '-')}": cards.prefer(b.url, binding)
                for binding in ("JSONRPC", "HTTP+JSON", "GRPC")
            }
            calls = [spawn_call(f"part {n}", f"book part {n}", agent)
                     for n, agent in enumerate(agents, 1)]  # fmt: skip
            script = [{"text": "", "tool_calls": calls}, {"text": "Three agents are on it."}]
            script += [{"text": f"noted {n}"} for n in range(1, 10)]
            config = a_config(tmp_path, script, agents)
            a = start(tmp_path, f"sqlite:///{tmp_path / 'a.db'}", config, name="a", env=A_ENV)
            parent = send(a.url, [{"text": "plan the offsite"}, brief()])
            assert said(parent) == "Three agents are on it."
            children = [f"{parent['id']}.{n}" for n in (1, 2, 3)]
            agents_by_child = dict(zip(children, agents, strict=True))
            assert [(r[0], r[1]) for r in refs(parent)] == list(zip(children, agents, strict=True))
            # Each child on B asks A; each question is relayed to alice, who answers each.
            for n in (1, 2, 3):
                eventually(
                    lambda: sub_state(get(a.url, parent["id"])) == "awaiting-answer",
                    f"question {n}",
                )
                send(a.url, [{"text": f"Lyon {n}"}], parent["id"])
            relays = get(a.url, parent["id"])["metadata"]["accord.harness/channels"]["requests"]
            assert sorted(r["relay"].partition("#")[0] for r in relays) == children
            for relay in relays:
                child = relay["relay"].partition("#")[0]
                agent = agents_by_child[child]
                assert relay["to"] == "alice"
                assert relay["answered_by"]
                assert relay["question"] == (
                    f"Sub-task {child} (on {agent}) asks: @accord-a Which city?"
                )
            done = eventually(
                lambda: (t := get(a.url, parent["id"])) and len(told(t)) == 3
                and sub_state(t) == "awaiting-next-message" and t,
                "the three results",
            )  # fmt: skip
            assert sorted(r[2] or "" for r in refs(done)) == ["COMPLETED"] * 3
            for text in told(done):
                assert "ended: COMPLETED." in text
                assert "Booked in the city you chose." in text
            for child, agent in zip(children, agents, strict=True):
                remote = remote_of(a, child)
                assert remote["agent"] == agent
                there = get(b.url, remote["task_id"], B_AS_A)
                # On B: A's brief (as accord-a, with the task envelope), B's question, A's
                # relayed answer (alice's words), and A's completion of the conversation.
                assert there["status"]["state"] == "TASK_STATE_COMPLETED"
                assert said(there) == "completed by accord-a"
                envelope = there["metadata"][TASK_KEY]
                assert (envelope["name"], envelope["goal"]) == (
                    f"part {children.index(child) + 1}", f"book part {children.index(child) + 1}",
                )  # fmt: skip
                from_a = [m for m in there["history"] if m["role"] == "ROLE_USER"]
                assert [m["messageId"] for m in from_a] == [
                    f"{child}:brief", f"{child}:2", f"{child}:complete",
                ]  # fmt: skip
                assert from_a[1]["parts"] == [{"text": relayed_answer(done, child)}]
    finally:
        if a is not None:
            a.stop()
        b.stop()


def test_kill_9_of_a_while_it_waits_and_b_down_for_a_while(tmp_path: Path) -> None:
    b_port = free_port()
    b_store = f"sqlite:///{tmp_path / 'b.db'}"
    b = start(tmp_path, b_store, b_config(tmp_path, B_SCRIPT), name="b1", port=b_port)
    script = [{"text": "", "tool_calls": [spawn_call("venue", "book a venue", "b")]},
              {"text": "B is on it."}, {"text": "All booked."}]  # fmt: skip
    config = a_config(tmp_path, script, {"b": b.url})
    a_store = f"sqlite:///{tmp_path / 'a.db'}"
    a = start(tmp_path, a_store, config, name="a1", env=A_ENV)
    try:
        parent = send(a.url, [{"text": "plan"}, brief()])
        child = f"{parent['id']}.1"
        eventually(
            lambda: sub_state(get(a.url, parent["id"])) == "awaiting-answer", "the relayed question"
        )
        a.kill()  # A dies while it waits on B's child
        b.stop()  # … and B goes down for a while
        a = start(tmp_path, a_store, config, name="a2", env=A_ENV)
        answered = send(a.url, [{"text": "Lyon"}], parent["id"])
        assert said(answered) == f"The answer goes to sub-task {child}."
        # A cannot pass the answer on while B is down: its follow keeps trying.
        eventually(lambda: remote_of(a, child)["error"], "a failed attempt to reach B")
        b = start(tmp_path, b_store, b_config(tmp_path, B_SCRIPT), name="b2", port=b_port)
        done = eventually(
            lambda: (t := get(a.url, parent["id"])) and said(t) == "All booked." and t,
            "A's parent to resume",
        )
        assert sub_state(done) == "awaiting-next-message"
        [result] = told(done)
        assert "Booked in the city you chose." in result
        there = get(b.url, remote_of(a, child)["task_id"], B_AS_A)
        assert there["status"]["state"] == "TASK_STATE_COMPLETED"
        from_a = [m["messageId"] for m in there["history"] if m["role"] == "ROLE_USER"]
        assert from_a == [f"{child}:brief", f"{child}:2", f"{child}:complete"]  # each once
    finally:
        a.stop()
        b.stop()


def test_the_official_sdk_server_as_the_remote_agent(tmp_path: Path) -> None:
    with sdk_echo_server() as echo:
        script = [
            {"text": "", "tool_calls": [spawn_call("echo", "say hello", "echo"),
                                        spawn_call("slow", "slow", "echo"),
                                        spawn_call("slower", "slow", "echo")]},
            {"text": "Asked the echo agent three times."},
            {"text": "Got an echo."},
        ]  # fmt: skip
        config = a_config(tmp_path, script, {"echo": echo.url}, credentials='"none"')
        a = start(tmp_path, f"sqlite:///{tmp_path / 'a.db'}", config, name="a", env=A_ENV)
        try:
            parent = send(a.url, [{"text": "go"}, brief()])
            fast, slow, slower = (f"{parent['id']}.{n}" for n in (1, 2, 3))
            done = eventually(
                lambda: (t := get(a.url, parent["id"])) and said(t) == "Got an echo." and t,
                "the echo's result",
            )
            [result] = told(done)
            assert f"Sub-task {fast} (on echo) ended: COMPLETED." in result
            assert "[artifact echo]\necho: say hello" in result
            # The slow ones are still at work there. A stand-in canceled cancels its task
            # there; cancelling the parent cancels the other one there.
            eventually(
                lambda: (
                    [r[1:] for r in refs(get(a.url, parent["id"]))[1:]] == [("echo", "WORKING")] * 2
                ),
                "both at work there",
            )
            remotes = {child: remote_of(a, child)["task_id"] for child in (slow, slower)}

            def echo_state(child: str) -> str:
                params = {"id": remotes[child]}
                found = httpx.post(
                    f"{echo.url}/a2a/jsonrpc",
                    json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": params},
                    headers={"A2A-Version": "1.0"},
                    timeout=10,
                ).json()
                return str(found["result"]["status"]["state"])

            rpc(a.url, "CancelTask", {"id": slower}, ALICE)
            eventually(lambda: echo_state(slower) == "TASK_STATE_CANCELED", "slower canceled")
            assert echo_state(slow) == "TASK_STATE_WORKING"
            canceled = rpc(a.url, "CancelTask", {"id": parent["id"]}, ALICE)
            assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
            eventually(lambda: echo_state(slow) == "TASK_STATE_CANCELED", "slow canceled there")
            stand_in = eventually(
                lambda: (t := get(a.url, slow))["status"]["state"] == "TASK_STATE_CANCELED" and t,
                "the stand-in canceled",
            )
            assert stand_in["status"]["state"] == "TASK_STATE_CANCELED"
        finally:
            a.stop()


def test_cancelling_a_parent_ends_its_references_with_its_children(tmp_path: Path) -> None:
    b = start(tmp_path, f"sqlite:///{tmp_path / 'b.db'}", b_config(tmp_path, B_SCRIPT), name="b")
    script = [{"text": "", "tool_calls": [spawn_call("venue", "book a venue", "b")]},
              {"text": "B is on it."}]  # fmt: skip
    config = a_config(tmp_path, script, {"b": b.url})
    a = start(tmp_path, f"sqlite:///{tmp_path / 'a.db'}", config, name="a", env=A_ENV)
    try:
        parent = send(a.url, [{"text": "plan"}, brief()])
        remote_child, side = f"{parent['id']}.1", f"{parent['id']}.2"
        send(a.url, [{"text": "/sub-task a side chat"}], parent["id"])  # a local child
        # B's task asks A (its question is relayed to alice): both children are open.
        waiting = eventually(
            lambda: (t := get(a.url, parent["id"])) and sub_state(t) == "awaiting-answer" and t,
            "the relayed question",
        )
        assert refs(waiting) == [
            (remote_child, "b", "INPUT_REQUIRED"),
            (side, None, "INPUT_REQUIRED"),
        ]
        there = remote_of(a, remote_child)["task_id"]
        canceled = rpc(a.url, "CancelTask", {"id": parent["id"]}, ALICE)
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        # The references end with the cancel, in its own snapshot …
        ended_refs = [(remote_child, "b", "CANCELED"), (side, None, "CANCELED")]
        assert refs(canceled) == ended_refs
        # … and the children end so: on B, its stand-in on A, and the local one.
        eventually(
            lambda: get(b.url, there, B_AS_A)["status"]["state"] == "TASK_STATE_CANCELED",
            "B's task canceled",
        )
        for child in (remote_child, side):
            eventually(
                lambda child=child: get(a.url, child)["status"]["state"] == "TASK_STATE_CANCELED",
                f"{child} canceled",
            )
        assert refs(get(a.url, parent["id"])) == ended_refs
    finally:
        a.stop()
        b.stop()
