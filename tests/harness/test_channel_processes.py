"""Channels between real processes: the membership boundary's bodies on every binding; a
harness asking an agent participant served by another ``accord serve`` (down for a while
first) whose help_reply resumes the task; ``kill -9`` after a message's append and before
its delivery, every recipient getting it exactly once after the restart."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc
from google.protobuf import json_format
from google.rpc import status_pb2
from tests.harness.harness_proc import (
    HarnessServer,
    harness_serve,
    start,
    write_settings,
)
from tests.marks import POSTGRES
from tests.processes import free_port
from tests.waiting import eventually

pytestmark = pytest.mark.processes

CHANNEL_MEDIA_TYPE = "application/vnd.tiny-harness.channel+json"
EVENT_MEDIA_TYPE = "application/vnd.tiny-harness.event+json"
STATUS_KEY = "io.github.madarauchiha-314.tiny-harness/status"
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
ASK = {
    "name": "ask_participant",
    "arguments": {"participant_id": "helper", "question": "Which venue?"},
}
KEYS = {"alice": "alice-key-0123456789", "helper": "helper-key-0123456789"}
B_KEYS = {"accord-a": "a-at-b-key-0123456789", "accord-a2": "a2-at-b-key-0123456789"}


def brief(participants: dict[str, tuple[str, str]], **more: Any) -> dict[str, Any]:
    people = [{"id": who, "kind": kind, "role": role} for who, (kind, role) in participants.items()]
    payload = {"name": "offsite", "goal": "a plan", "participants": people, **more}
    return {"data": {"kind": "task", "payload": payload}, "mediaType": EVENT_MEDIA_TYPE}


def channel(**data: Any) -> dict[str, Any]:
    return {"data": data, "mediaType": CHANNEL_MEDIA_TYPE}


def message(parts: list[dict[str, Any]], task_id: str = "") -> dict[str, Any]:
    body: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": parts}
    if task_id:
        body["taskId"] = task_id
    return body


def rpc(url: str, headers: dict[str, str], method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer: dict[str, Any] = httpx.post(
        url, json=body, headers={**HEADERS, **headers}, timeout=30
    ).json()
    return answer


def send(
    url: str, headers: dict[str, str], parts: list[dict[str, Any]], task_id: str = ""
) -> dict[str, Any]:
    answer = rpc(url, headers, "SendMessage", {"message": message(parts, task_id)})
    assert "result" in answer, answer
    task: dict[str, Any] = answer["result"]["task"]
    return task


def get(url: str, headers: dict[str, str], task_id: str) -> dict[str, Any]:
    answer = rpc(url, headers, "GetTask", {"id": task_id})
    assert "result" in answer, answer
    task: dict[str, Any] = answer["result"]
    return task


def sub_state(task: dict[str, Any]) -> str | None:
    value = task.get("metadata", {}).get(STATUS_KEY)
    return value.get("sub_state") if isinstance(value, dict) else None


# --- the boundary, on every binding ---------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HarnessServer]:
    with harness_serve(tmp_path_factory.mktemp("channels")) as started:
        yield started


def json_rpc_body(
    server: HarnessServer, who: str, parts: list[dict[str, Any]], task_id: str
) -> str:
    answer = rpc(
        server.url, {"X-Participant-Id": who}, "SendMessage", {"message": message(parts, task_id)}
    )
    return json.dumps(answer["error"], sort_keys=True)


def rest_body(server: HarnessServer, who: str, parts: list[dict[str, Any]], task_id: str) -> str:
    response = httpx.post(
        f"{server.url}/message:send",
        json={"message": message(parts, task_id)},
        headers={**HEADERS, "X-Participant-Id": who},
        timeout=30,
    )
    return f"{response.status_code} {json.dumps(response.json(), sort_keys=True)}"


async def grpc_body(
    server: HarnessServer, who: str, parts: list[dict[str, Any]], task_id: str
) -> str:
    request = json_format.ParseDict({"message": message(parts, task_id)}, pb.SendMessageRequest())
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel_:
        stub = a2a_pb2_grpc.A2AServiceStub(channel_)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.SendMessage(
                request, metadata=(("a2a-version", "1.0"), ("x-participant-id", who))
            )
    error = refused.value
    raw = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    details = json_format.MessageToDict(status_pb2.Status.FromString(raw)) if raw else None
    return json.dumps([error.code().name, error.details(), details], sort_keys=True)


async def test_a_non_member_an_unknown_channel_and_an_unknown_task_read_alike_on_every_binding(
    server: HarnessServer,
) -> None:
    team = {
        "alice": ("human", "admin"),
        "bob": ("human", "watcher"),
        "carol": ("human", "reporter"),
    }
    ops = {"channel_id": "ops", "members": ["alice", "bob"]}
    task = send(
        server.url, {"X-Participant-Id": "alice"}, [{"text": "plan"}, brief(team, channels=[ops])]
    )
    unknown = str(uuid.uuid4())
    cases = [
        ("carol", "ops", task["id"]),  # a participant outside the channel
        ("carol", "nope", task["id"]),  # a channel the task does not have
        ("mallory", "ops", task["id"]),  # no participant at all
        ("carol", "ops", unknown),  # no such task
    ]
    for binding in ("JSONRPC", "HTTP+JSON", "GRPC"):
        bodies = []
        for who, channel_id, task_id in cases:
            parts = [channel(channel_id=channel_id, sender=who, text="hello?")]
            if binding == "JSONRPC":
                found = json_rpc_body(server, who, parts, task_id)
            elif binding == "HTTP+JSON":
                found = rest_body(server, who, parts, task_id)
            else:
                found = await grpc_body(server, who, parts, task_id)
            bodies.append(found.replace(task["id"], "ID").replace(unknown, "ID"))
        assert len(set(bodies)) == 1, (binding, bodies)
        assert "not found" in bodies[0].lower(), bodies[0]
    # bob, in ops, may send there; nothing of the refused sends was kept.
    after = send(
        server.url,
        {"X-Participant-Id": "bob"},
        [channel(channel_id="ops", sender="bob", text="hi")],
        task["id"],
    )
    assert after["status"]["message"]["parts"][0]["text"] == "[ops] bob: hi"
    assert len(after["history"]) == 4  # the brief, its answer, bob's message, its relay


# --- an agent participant served by another process ------------------------------------------


def principals(keys: dict[str, str]) -> str:
    return "".join(
        f'[[principals]]\nidentity = "{who}"\nactors = ["a2a.tasks.Client"]\napi_key = "{key}"\n'
        for who, key in keys.items()
    )


def harness_a(workdir: Path, peer_url: str, script: list[dict[str, Any]], *agents: str) -> Path:
    roster = "".join(
        f'[[harness.agents]]\nid = "{agent}"\ncard = "{peer_url}"\n'
        f'credentials = {{ api_key_env = "{agent.upper()}_KEY_AT_B" }}\n'
        for agent in agents
    )
    delivery = "[harness.delivery]\nretry_base_s = 0.1\nretry_max_s = 0.5\npoll_interval_s = 0.2\n"
    config = write_settings(workdir, roster + delivery, script=script)
    config.write_text(config.read_text() + principals(KEYS))
    return config


def peer_env(workdir: Path, harness_url: str) -> dict[str, str]:
    return {
        "PEER_LOG": str(workdir / "peer.jsonl"),
        "PEER_HARNESS_URL": harness_url,
        "PEER_KEY": KEYS["helper"],
        "PEER_ID": "helper",
    }


def peer(workdir: Path, port: int, harness_url: str) -> HarnessServer:
    """B: ``channel_peer`` served on ``port``, answering help requests on ``harness_url``."""
    config = workdir / "peer.toml"
    config.write_text(principals(B_KEYS))
    environ = peer_env(workdir, harness_url)
    return start(workdir, "memory://", config, name="b", grpc=False, agent="channel_peer:agent",
                 port=port, env=environ)  # fmt: skip


def peer_log(workdir: Path) -> list[dict[str, Any]]:
    path = workdir / "peer.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def outbox(db: Path) -> list[tuple[str, int, str, int]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT recipient, seq, state, failures FROM channel_deliveries")
        return [tuple(row) for row in rows]
    finally:
        conn.close()


A_ENV = {"HELPER_KEY_AT_B": B_KEYS["accord-a"], "SCOUT_KEY_AT_B": B_KEYS["accord-a2"]}
ALICE = {"X-API-Key": KEYS["alice"]}


def test_a_help_request_to_an_agent_on_another_server_down_for_a_while_resumes_the_task(
    tmp_path: Path,
) -> None:
    b_port = free_port()
    peer_url = f"http://127.0.0.1:{b_port}"
    script = [{"text": "", "tool_calls": [ASK]}, {"text": "Booked venue A."}]
    db = tmp_path / "a.db"
    a = start(tmp_path, f"sqlite:///{db}", harness_a(tmp_path, peer_url, script, "helper"),
              name="a", grpc=False, env=A_ENV)  # fmt: skip
    b = None
    try:
        team = {"alice": ("human", "reporter"), "helper": ("agent", "watcher")}
        task = send(a.url, ALICE, [{"text": "plan the offsite"}, brief(team)])
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert sub_state(task) == "awaiting-answer"
        request = task["status"]["message"]
        assert request["parts"][0]["text"] == "@helper Which venue?"
        # B is down: the request waits in A's outbox, its attempts failing.
        eventually(lambda: any(row[3] >= 2 for row in outbox(db)), "failed attempts")
        assert peer_log(tmp_path) == []
        b = peer(tmp_path, b_port, a.url)
        done = eventually(
            lambda: (
                (t := get(a.url, ALICE, task["id"]))
                and sub_state(t) == "awaiting-next-message"
                and t
            ),
            "the reply to resume the task",
        )
        assert done["status"]["message"]["parts"][0]["text"] == "Booked venue A."
        reply = next(
            m for m in done["history"] if m.get("metadata", {}).get("participant_id") == "helper"
        )
        answer = reply["parts"][0]["data"]
        assert (answer["kind"], answer["in_reply_to"], answer["text"]) == (
            "help_reply", request["messageId"], "Venue A",
        )  # fmt: skip
        [got] = peer_log(tmp_path)  # delivered once, as A's identity at B
        assert (got["id"], got["caller"]) == (request["messageId"], "accord-a")
        assert got["channel"]["kind"] == "help_request"
        assert {row[2] for row in outbox(db)} == {"delivered"}
    finally:
        a.stop()
        if b is not None:
            b.stop()


def test_kill_9_after_the_append_and_before_the_delivery_delivers_once_after_restart(
    tmp_path: Path,
) -> None:
    b_port = free_port()
    peer_url = f"http://127.0.0.1:{b_port}"
    script = [{"text": f"answer {n}"} for n in range(1, 10)]
    db = tmp_path / "a.db"
    config = harness_a(tmp_path, peer_url, script, "helper", "scout")
    a = start(tmp_path, f"sqlite:///{db}", config, name="a1", grpc=False, env=A_ENV)
    try:
        team = {
            "alice": ("human", "reporter"),
            "helper": ("agent", "watcher"),
            "scout": ("agent", "watcher"),
        }
        task = send(a.url, ALICE, [{"text": "plan"}, brief(team)])
        hello = channel(channel_id=task["id"], sender="alice", text="hello, agents")
        after = send(a.url, ALICE, [hello], task["id"])  # stored (and answered) before it returns
        assert after["status"]["message"]["parts"][0]["text"] == "answer 2"
    finally:
        a.kill()  # B was never up: nothing could be delivered yet
    assert peer_log(tmp_path) == []
    b = peer(tmp_path, b_port, "http://unused")
    a = start(tmp_path, f"sqlite:///{db}", config, name="a2", grpc=False, env=A_ENV)
    try:
        eventually(lambda: len(peer_log(tmp_path)) >= 2, "both deliveries")
        eventually(
            lambda: outbox(db) and {r[2] for r in outbox(db)} == {"delivered"}, "the outbox done"
        )
        got = peer_log(tmp_path)
        assert sorted(g["caller"] for g in got) == ["accord-a", "accord-a2"]  # helper, scout
        assert {g["id"] for g in got} == {f"{task['id']}:channel:{outbox(db)[0][1]}"}
        assert {g["channel"]["text"] for g in got} == {"hello, agents"}
        history = get(a.url, ALICE, task["id"])["history"]
        assert (
            sum(1 for m in history if m["parts"][0].get("data", {}).get("text") == "hello, agents")
            == 1
        )
    finally:
        a.stop()
        b.stop()


@pytest.mark.parametrize("store_kind", ["sqlite", POSTGRES])
def test_kill_9_between_the_append_and_the_handling_handles_the_message_once_after_restart(
    tmp_path: Path, store_kind: str, request: pytest.FixtureRequest
) -> None:
    """A channel message stored, then ``kill -9`` before its handler decided anything (the
    test-only stall holds every handler): the restarted harness relays it, starts its turn
    and delivers it to the agent member, each once; a further restart does nothing again."""
    b_port = free_port()
    peer_url = f"http://127.0.0.1:{b_port}"
    store = (
        f"sqlite:///{tmp_path / 'a.db'}"
        if store_kind == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    config = harness_a(
        tmp_path, peer_url, [{"text": f"answer {n}"} for n in range(1, 10)], "helper"
    )
    stalled = {**A_ENV, "ACCORD_TEST_STALL_CHANNEL_HANDLING": "1"}
    b = peer(tmp_path, b_port, "http://unused")
    a = start(tmp_path, store, config, name="a1", grpc=False, env=stalled)
    try:
        team = {"alice": ("human", "reporter"), "helper": ("agent", "watcher")}
        task = send(a.url, ALICE, [{"text": "plan"}, brief(team)])
        assert task["status"]["message"]["parts"][0]["text"] == "answer 1"
        hello = message([channel(channel_id=task["id"], sender="alice", text="hello, agents")])
        hello["taskId"] = task["id"]
        params = {"message": hello, "configuration": {"returnImmediately": True}}
        assert "result" in rpc(a.url, ALICE, "SendMessage", params)
        stored = get(a.url, ALICE, task["id"])
        assert stored["history"][-1]["messageId"] == hello["messageId"]  # stored, not handled
        assert stored["status"]["message"]["parts"][0]["text"] == "answer 1"
    finally:
        a.kill()
    assert peer_log(tmp_path) == []  # nothing relayed, so nothing owed to the agent yet
    try:
        for round_ in (2, 3):  # restarted; then once more, with nothing left owed
            a = start(tmp_path, store, config, name=f"a{round_}", grpc=False, env=A_ENV)
            try:
                done = eventually(
                    lambda url=a.url: (
                        (t := get(url, ALICE, task["id"]))
                        and t["status"]["message"]["parts"][0]["text"] == "answer 2"
                        and sub_state(t) == "awaiting-next-message"
                        and t
                    ),
                    "the owed turn",
                )
                eventually(lambda: peer_log(tmp_path), "the delivery")
                relays = [
                    m for m in done["history"]
                    if m.get("metadata", {}).get("accord.harness/channel_note", {}).get("relay")
                    == hello["messageId"]
                ]  # fmt: skip
                assert len(relays) == 1
                [got] = peer_log(tmp_path)  # once, as the relay
                assert (got["id"], got["caller"]) == (relays[0]["messageId"], "accord-a")
                assert got["channel"]["text"] == "hello, agents"
            finally:
                a.kill() if round_ == 2 else a.stop()
        final = get_stopped_history(tmp_path, store, config)
        texts = [m["parts"][0].get("text") for m in final if m["role"] == "ROLE_AGENT"]
        assert texts.count("answer 2") == 1 and "answer 3" not in texts  # one turn, once
    finally:
        b.stop()


def get_stopped_history(workdir: Path, store: str, config: Path) -> list[dict[str, Any]]:
    """The history of the only task a stopped harness's store holds (read by a new one)."""
    server = start(workdir, store, config, name="reader", grpc=False, env=A_ENV)
    try:
        listed = rpc(server.url, ALICE, "ListTasks", {})
        [task] = listed["result"]["tasks"]
        history: list[dict[str, Any]] = get(server.url, ALICE, task["id"])["history"]
        return history
    finally:
        server.stop()
