"""The model-driven turn with real processes: ``accord serve --agent harness`` on a fake
OpenAI-compatible server (real HTTP, real streaming) and the demo's MCP orders server.

- tokens reach a streaming client in order, while the model is still writing;
- a turn calls MCP tools over stdio and over streamable HTTP;
- ``kill -9`` during a non-idempotent tool call and during a model stream, several times: the
  ledger proves no refund ran twice, the fake server's request log that no answered model call
  was made again, and every conversation ends parked;
- ``kill -9`` after the model's final answer and before the one append that journals it with
  the turn's end: the model call is lost, nothing else; the turn asks it again.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.harness.fake_openai import FakeOpenAI, Reply
from tests.harness.harness_proc import HarnessServer, start
from tests.harness.orders_mcp import ORDERS, orders_over_http
from tests.waiting import eventually

pytestmark = pytest.mark.processes

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json", "X-Participant-Id": "alice"}


def settings(tmp: Path, model: str, base_url: str = "", api: str = "chat", extra: str = "") -> Path:
    config = tmp / "harness.toml"
    text = f'[harness]\nmodel = "{model}"\n'
    if base_url:
        text += f'[harness.openai]\nbase_url = "{base_url}"\napi = "{api}"\n'
    config.write_text(text + extra)
    return config


def mcp_stdio(ledger: Path, slow: Path | None = None) -> str:
    env = f'ORDERS_LEDGER = "{ledger}"'
    if slow is not None:
        env += f', ORDERS_SLOW = "{slow}"'
    return (
        "[[harness.mcp]]\n"
        'name = "orders"\n'
        f'command = ["{sys.executable}", "{ORDERS}"]\n'
        'idempotent = ["get_order"]\n'
        f"env = {{ {env} }}\n"
    )


def message(text: str, task_id: str = "") -> dict[str, Any]:
    sent: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": []}
    sent["parts"].append({"text": text})
    if task_id:
        sent["taskId"] = task_id
    return sent


def send(server: HarnessServer, text: str, task_id: str = "") -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
    body["params"] = {"message": message(text, task_id)}
    answer = httpx.post(server.url, json=body, headers=HEADERS, timeout=60).json()
    assert "result" in answer, answer
    task: dict[str, Any] = answer["result"]["task"]
    return task


def get(server: HarnessServer, task_id: str) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    task: dict[str, Any] = httpx.post(server.url, json=body, headers=HEADERS, timeout=30).json()[
        "result"
    ]
    return task


def said(task: dict[str, Any]) -> str:
    return str(task["status"]["message"]["parts"][0]["text"])


def stream(server: HarnessServer, text: str) -> Iterator[tuple[float, dict[str, Any]]]:
    """SendStreamingMessage's events as they arrive, with the time each came."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage"}
    body["params"] = {"message": message(text)}
    with httpx.stream("POST", server.url, json=body, headers=HEADERS, timeout=60) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                yield time.monotonic(), json.loads(line[5:])["result"]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_tokens_reach_the_client_as_the_model_writes_them(
    tmp_path: Path, fake: FakeOpenAI, api: str
) -> None:
    # The model writes its first token, then holds the rest until the client has that one:
    # a server that kept tokens back until the answer ended would show it the first token only
    # after the model's last (the model gives up waiting after 30 s).
    first_seen = threading.Event()
    fake.replies.append(
        Reply(["Two ", "days ", "in ", "June."], pause_s=0.05, held_until=first_seen)
    )
    config = settings(tmp_path, "openai:fake-model", fake.base_url, api)
    server = start(tmp_path, f"sqlite:///{tmp_path / 't.db'}", config, grpc=False)
    events = []
    try:
        for at, event in stream(server, "when?"):
            events.append((at, event))
            if "artifactUpdate" in event:
                first_seen.set()
        task = get(server, events[-1][1]["statusUpdate"]["taskId"])
    finally:
        server.stop()
    chunks = [(at, e["artifactUpdate"]) for at, e in events if "artifactUpdate" in e]
    texts = [c["artifact"]["parts"][0]["text"] for _, c in chunks]
    # Each token as it comes, its newest character held back until more comes: the last
    # chunk carries text and says it is the last (no chunk is an empty text part).
    assert texts == ["Two", " days", " in", " June", "."]
    assert {c["artifact"]["artifactId"] for _, c in chunks} == {
        chunks[0][1]["artifact"]["artifactId"]
    }
    assert chunks[0][1]["artifact"]["name"] == "reply"
    assert [c.get("append", False) for _, c in chunks] == [False, True, True, True, True]
    assert [c.get("lastChunk", False) for _, c in chunks] == [False] * 4 + [True]
    assert all(part.get("text") for artifact in task["artifacts"] for part in artifact["parts"])
    assert all(part.get("text") for message in task["history"] for part in message["parts"])
    # The first token was on the client's stream before the model wrote its last one.
    assert chunks[0][0] < fake.sent_at[-1]
    final = events[-1][1]["statusUpdate"]
    assert final["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert final["status"]["message"]["parts"][0]["text"] == "Two days in June."
    usage = final["status"]["message"]["metadata"]["accord.harness/usage"]
    calls = usage.pop("calls")
    assert usage == {"input_tokens": 10, "output_tokens": 5, "cached_tokens": 0}
    assert list(calls.values()) == [[10, 5, 0]]  # the one model call, by its id


@pytest.fixture
def orders_http(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    ledger = tmp_path / "http-ledger.jsonl"
    with orders_over_http(ledger) as url:
        yield url, ledger


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_turn_calls_mcp_tools(
    tmp_path: Path, transport: str, request: pytest.FixtureRequest
) -> None:
    script = tmp_path / "script.json"
    call = {"name": "orders_get_order", "arguments": {"order_id": 48213}}
    script.write_text(
        json.dumps([{"text": "", "tool_calls": [call]}, {"text": "a cracked blender"}])
    )
    if transport == "stdio":
        ledger = tmp_path / "ledger.jsonl"
        mcp = mcp_stdio(ledger)
    else:
        url, ledger = request.getfixturevalue("orders_http")
        mcp = f'[[harness.mcp]]\nname = "orders"\nurl = "{url}"\n'
    config = settings(tmp_path, f"scripted:{script}", extra=mcp)
    server = start(tmp_path, f"sqlite:///{tmp_path / 't.db'}", config, grpc=False)
    try:
        task = send(server, "what happened to order 48213?")
    finally:
        server.stop()
    assert said(task) == "a cracked blender"
    assert [json.loads(line)["tool"] for line in ledger.read_text().splitlines()] == ["get_order"]


def test_kill_9_never_runs_a_tool_twice_nor_repeats_an_answered_model_call(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    ledger, slow = tmp_path / "ledger.jsonl", tmp_path / "slow"
    config = settings(tmp_path, "openai:fake-model", fake.base_url, extra=mcp_stdio(ledger, slow))
    store = f"sqlite:///{tmp_path / 't.db'}"
    ended: list[str] = []
    for round_ in range(3):
        # A refund hangs (its server waits while `slow` exists): kill -9 during the call.
        refund = ("call_r", "orders_refund", {"order_id": 48213, "reason": f"round {round_}"})
        fake.replies.extend([Reply([], tool_calls=[refund]), Reply(["checked, and said so"])])
        slow.touch()
        server = start(tmp_path, store, config, name=f"tool-{round_}", grpc=False)
        asked_before = len(fake.requests)
        in_background(send, server, "refund it")
        # the model answered and the refund runs (and hangs)
        eventually(lambda: slow.read_text() == "waiting", "the refund to run", every_s=0.02)
        server.kill()
        slow.unlink()  # the orphaned call may finish now: it ran once, never twice
        # A model stream cut by kill -9 while it writes.
        fake.replies.extend(
            [Reply(["one ", "two ", "three"], pause_s=1.0), Reply(["answered after the crash"])]
        )
        server = start(tmp_path, store, config, name=f"after-tool-{round_}", grpc=False)
        in_background(lambda s, t: list(stream(s, t)), server, "and then?")
        eventually(
            lambda asked=asked_before + 3: fake.sent_at and len(fake.requests) >= asked,
            "the model to start writing",
            every_s=0.02,
        )
        time.sleep(0.3)  # a moment into the stream (it lasts 2 s): the kill cuts it mid-way
        server.kill()
        server = start(tmp_path, store, config, name=f"after-stream-{round_}", grpc=False)
        try:
            ended += wait_all_parked(server, tmp_path)
        finally:
            server.stop()
    lines = ledger.read_text().splitlines() if ledger.exists() else []
    reasons = [r["reason"] for r in map(json.loads, lines) if r["tool"] == "refund"]
    assert len(reasons) == len(set(reasons)) <= 3  # at most once per round (the orphaned call
    # of a killed server may finish, or die with it), never again after the restart
    # The resumed turns told the model the refund was cut, instead of running it again.
    told = [str(r) for r in fake.requests if "not safe to run twice" in str(r)]
    assert len(told) == 3
    # Each round asked the model: refund call (1), after the resume (1), the cut stream (1)
    # and its retry after the crash (1): an answered call was never made again.
    assert len(fake.requests) == 3 * 4
    assert "checked, and said so" in ended and "answered after the crash" in ended


def test_kill_9_of_a_turn_a_message_joined_resumes_it_from_its_own_journal(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """A message joins a turn whose refund hangs, then ``kill -9``: the restarted server's
    turn (given the joined message as the newest) finds the cut turn's journal: the refund
    is reported as interrupted, not run again, and no answered model call is made again."""
    ledger, slow = tmp_path / "ledger.jsonl", tmp_path / "slow"
    config = settings(tmp_path, "openai:fake-model", fake.base_url, extra=mcp_stdio(ledger, slow))
    store = f"sqlite:///{tmp_path / 't.db'}"
    refund = ("call_r", "orders_refund", {"order_id": 48213, "reason": "joined"})
    fake.replies.extend(
        [Reply(["hello"]), Reply([], tool_calls=[refund]), Reply(["refund unconfirmed"])]
    )
    slow.touch()
    server = start(tmp_path, store, config, name="joined", grpc=False)
    try:
        task = send(server, "hi")
        in_background(send, server, "refund order 48213", task["id"])
        # the model answered and the refund runs (and hangs)
        eventually(lambda: slow.read_text() == "waiting", "the refund to run", every_s=0.02)
        in_background(send, server, "and tell me when it is done", task["id"])
        eventually(
            lambda: (
                get(server, task["id"])["history"][-1]["parts"][0].get("text")
                == "and tell me when it is done"
            ),
            "the joined message to be stored",
        )
    finally:
        server.kill()
    slow.unlink()
    server = start(tmp_path, store, config, name="after-joined", grpc=False)
    try:
        assert wait_all_parked(server, tmp_path) == ["refund unconfirmed"]
    finally:
        server.stop()
    lines = ledger.read_text().splitlines() if ledger.exists() else []
    assert len([r for r in map(json.loads, lines) if r["tool"] == "refund"]) <= 1  # (the
    # killed server's call may finish, or die with it), never run again after the restart
    told = [r for r in fake.requests if "not safe to run twice" in str(r)]
    assert len(told) == 1  # the resumed turn knew the refund had started
    assert len(fake.requests) == 3  # hello, the refund's call, the answer after the restart
    assert "and tell me when it is done" in str(fake.requests[-1])  # (the joined message)


def test_kill_9_before_a_final_answers_one_append_loses_only_the_model_call(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    """On one node a final answer is journaled in the append that ends its turn, not awaited
    on its own. ``kill -9`` while that append cannot be made (the test holds SQLite's write
    lock from the model's last chunk on, until the server's append fails for it): the
    restarted server finds the turn WORKING with its message, asks the model again, once,
    and answers; the lost answer is nowhere."""
    config = settings(tmp_path, "openai:fake-model", fake.base_url)
    database = tmp_path / "t.db"
    store = f"sqlite:///{database}"
    locked = threading.Event()
    fake.replies.extend(
        [
            Reply(["hi there"]),
            Reply(["lost ", "answer"], held_until=locked),
            Reply(["answered after the crash"]),
        ]
    )
    server = start(tmp_path, store, config, name="before", grpc=False)
    lock = sqlite3.connect(database, timeout=30, isolation_level=None)
    try:
        task = send(server, "hello")
        in_background(send, server, "and then?", task["id"])
        eventually(
            lambda: working_on(get(server, task["id"]), "and then?"),
            "the message and WORKING durable, the model writing",
        )
        lock.execute("BEGIN IMMEDIATE")  # from here on nothing the server writes is durable
        locked.set()
        eventually(lambda: len(fake.sent_at) == 3, "the model's last chunk", every_s=0.02)
        eventually(
            lambda: f"append to task {task['id']} failed" in server.log(),
            "the server's append to wait for the lock in vain (SQLite's busy timeout)",
        )
    finally:
        server.kill()
        lock.close()  # (its transaction rolled back: it wrote nothing)
    assert len(fake.requests) == 2
    server = start(tmp_path, store, config, name="after", grpc=False)
    try:
        assert wait_all_parked(server, tmp_path) == ["answered after the crash"]
        history = get(server, task["id"])["history"]
    finally:
        server.stop()
    texts = [m["parts"][0].get("text") for m in history]
    assert texts == ["hello", "hi there", "and then?", "answered after the crash"]
    assert len(fake.requests) == 3  # the lost call, asked again: once
    assert "and then?" in str(fake.requests[-1])


def working_on(task: dict[str, Any], text: str) -> bool:
    """The task is WORKING on the message ``text`` (both durable: GetTask shows no other)."""
    last = task["history"][-1]["parts"][0].get("text")
    return bool(task["status"]["state"] == "TASK_STATE_WORKING" and last == text)


def in_background(request: Any, *arguments: Any) -> None:
    """A request the test cuts by killing its server: its failure is expected."""

    def run() -> None:
        with contextlib.suppress(httpx.HTTPError, KeyError, AssertionError):
            request(*arguments)

    threading.Thread(target=run, daemon=True).start()


def wait_all_parked(server: HarnessServer, tmp_path: Path) -> list[str]:
    """Every conversation on the server, once none is running: their answers."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 100}}
    deadline = time.monotonic() + 30
    while True:
        tasks = httpx.post(server.url, json=body, headers=HEADERS, timeout=30).json()["result"][
            "tasks"
        ]
        states = {t["status"]["state"] for t in tasks}
        if states <= {"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"}:
            return [said(t) for t in tasks]
        assert time.monotonic() < deadline, f"still running: {states}"
        time.sleep(0.1)
