"""``accord serve --agent harness`` with ``model = "anthropic:…"`` on a fake Anthropic Messages
API (real HTTP, real SSE), talked to with the official a2a-sdk client:

- the model's text reaches a streaming client while the model is still writing;
- a turn calls MCP tools in parallel (tool_use blocks in, tool_result blocks back in one user
  turn), then answers;
- usage is counted once per model call;
- a model that stays overloaded, or rate-limits, ends the turn (parked, with its kind of
  failure), after the retries the settings allow and never more.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format
from tests.harness.fake_anthropic import FakeAnthropic, Reply
from tests.harness.harness_proc import HarnessServer, start
from tests.harness.orders_mcp import ORDERS

pytestmark = pytest.mark.processes

ALICE = ClientCallContext(service_parameters={"X-Participant-Id": "alice"})
USAGE_KEY = "accord.harness/usage"
STATUS_KEY = "io.github.madarauchiha-314.tiny-harness/status"


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def serve(tmp: Path, fake: FakeAnthropic, extra: str = "") -> HarnessServer:
    config = tmp / "harness.toml"
    config.write_text(
        '[harness]\nmodel = "anthropic:claude-fake"\n'
        f'[harness.anthropic]\nbase_url = "{fake.base_url}"\nattempts = 2\n{extra}'
    )
    # (a key, as a real deployment has: it may go to a loopback server over plain HTTP)
    env = {"ANTHROPIC_API_KEY": "sk-ant-test"}
    return start(tmp, f"sqlite:///{tmp / 't.db'}", config, grpc=False, env=env)


async def turn(
    server: HarnessServer, text: str, seen: Callable[[Any], None] = lambda event: None
) -> list[Any]:
    """One message sent by alice with the official client, streamed: its events (each
    given to ``seen`` as it comes)."""
    config = ClientConfig(streaming=True, supported_protocol_bindings=["JSONRPC"])
    request = pb.SendMessageRequest(
        message=pb.Message(
            role=pb.ROLE_USER, message_id=uuid.uuid4().hex, parts=[pb.Part(text=text)]
        )
    )
    events: list[Any] = []
    async with await create_client(server.url, client_config=config) as client:
        async for event in client.send_message(request, context=ALICE):
            seen(event)
            events.append(event)
    return events


def last_status(events: list[Any]) -> Any:
    return [e.status_update for e in events if e.HasField("status_update")][-1]


def usage(status: Any) -> dict[str, Any]:
    found: dict[str, Any] = json_format.MessageToDict(status.status.message.metadata)[USAGE_KEY]
    return found


async def test_the_answer_streams_to_the_client_and_usage_counts_once(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    # The model writes its first token, then holds the rest until the client has that one.
    first_seen = threading.Event()
    fake.replies.append(
        Reply(
            ["Two ", "days ", "in June."],
            usage=(120, 7, 100),
            cache_write=15,
            pause_s=0.05,
            held_until=first_seen,
        )
    )
    arrived: list[float] = []

    def seen(event: Any) -> None:
        if event.HasField("artifact_update"):
            arrived.append(time.monotonic())
            first_seen.set()

    server = serve(tmp_path, fake)
    try:
        events = await turn(server, "when?", seen)
    finally:
        server.stop()
    # The first token was on the client's stream before the model wrote its last one (the
    # model gives up waiting for it after 30 s).
    assert arrived[0] < fake.sent_at[-1]
    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    texts = [part.text for chunk in chunks for part in chunk.artifact.parts if part.text]
    assert texts == ["Two", " days", " in June", "."]  # (the newest character held back)
    assert chunks[-1].last_chunk and not any(c.last_chunk for c in chunks[:-1])
    assert chunks[0].artifact.name == "reply"
    assert {chunk.artifact.artifact_id for chunk in chunks} == {chunks[0].artifact.artifact_id}
    final = last_status(events)
    assert pb.TaskState.Name(final.status.state) == "TASK_STATE_INPUT_REQUIRED"
    assert final.status.message.parts[0].text == "Two days in June."
    used = usage(final)
    calls = used.pop("calls")
    # message_start and message_delta both say the input: one call, counted once
    assert used == {"input_tokens": 120, "output_tokens": 7, "cached_tokens": 100}
    assert list(calls.values()) == [[120, 7, 100]]
    # What the fake was asked: one streamed call with the key, the prompt cached.
    [sent] = fake.requests
    assert sent["stream"] is True and sent["model"] == "claude-fake"
    assert sent["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert sent["messages"][-1]["content"][-1]["text"] == "[alice] when?"
    assert "sk-ant-test" in json.dumps(fake.headers[0])


async def test_a_turn_calls_mcp_tools_in_parallel(tmp_path: Path, fake: FakeAnthropic) -> None:
    ledger = tmp_path / "ledger.jsonl"
    mcp = (
        "[[harness.mcp]]\n"
        'name = "orders"\n'
        f'command = ["{sys.executable}", "{ORDERS}"]\n'
        'idempotent = ["get_order"]\n'
        f'env = {{ ORDERS_LEDGER = "{ledger}" }}\n'
    )
    calls = [
        ("toolu_a", "orders_get_order", {"order_id": 48213}),
        ("toolu_b", "orders_get_order", {"order_id": 51007}),
        ("toolu_c", "orders_get_order", {"order_id": 1}),
    ]
    fake.replies.extend(
        [
            Reply(["Looking both up."], tool_calls=calls, usage=(300, 40, 0), cache_write=280),
            Reply(["A cracked blender, and a kettle on its way."], usage=(420, 12, 280)),
        ]
    )
    server = serve(tmp_path, fake, mcp)
    try:
        events = await turn(server, "what about orders 48213 and 51007?")
    finally:
        server.stop()
    final = last_status(events)
    assert final.status.message.parts[0].text == "A cracked blender, and a kettle on its way."
    ran = sorted(json.loads(line)["order_id"] for line in ledger.read_text().splitlines())
    assert ran == [1, 48213, 51007]
    first, second = fake.requests
    assert "orders_get_order" in {tool["name"] for tool in first["tools"]}
    # The second call gives the calls back, and their results in one user turn after them.
    answered, results = second["messages"][-2:]
    assert answered["role"] == "assistant"
    assert [b["type"] for b in answered["content"]] == ["text", "tool_use", "tool_use", "tool_use"]
    assert results["role"] == "user"
    assert [(b["type"], b["tool_use_id"]) for b in results["content"]] == [
        ("tool_result", "toolu_a"),
        ("tool_result", "toolu_b"),
        ("tool_result", "toolu_c"),
    ]
    assert "arrived cracked" in results["content"][0]["content"]
    assert results["content"][2]["is_error"] is True  # (no order 1)
    used = usage(final)
    assert sorted(used.pop("calls").values()) == [[300, 40, 0], [420, 12, 280]]
    assert used == {"input_tokens": 720, "output_tokens": 52, "cached_tokens": 280}


async def test_a_model_that_stays_down_or_rate_limits_parks_the_turn_with_its_kind(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    # attempts = 2: an overloaded model is asked twice, then the turn fails, unavailable.
    fake.replies.extend([Reply(status=529), Reply(status=529)])
    # A 429 asking for more than accord waits: not asked again.
    fake.replies.append(Reply(status=429, retry_after=3600))
    server = serve(tmp_path, fake)
    try:
        down = last_status(await turn(server, "hello?"))
        assert len(fake.requests) == 2
        limited = last_status(await turn(server, "hello again?"))
        assert len(fake.requests) == 3
    finally:
        server.stop()
    log = server.log()
    assert_failed(down, "model_unavailable", "HTTP 529 (overloaded_error)", log)
    says = "HTTP 429 (rate_limit_error): fake failure 429 (it asked to wait 3600 s"
    assert_failed(limited, "rate_limited", says, log)


def assert_failed(status: Any, reason: str, says: str, log: str) -> None:
    """The turn ended on the model's failure, never the conversation: parked awaiting the
    next message, its status saying what failed and what to do, its kind in the metadata,
    and no traceback in the server's log."""
    assert pb.TaskState.Name(status.status.state) == "TASK_STATE_INPUT_REQUIRED"
    metadata = json_format.MessageToDict(status.metadata)
    assert metadata[STATUS_KEY] == {"sub_state": "awaiting-next-message", "reason": reason}
    line = status.status.message.parts[0].text
    assert line.startswith("the model anthropic:claude-fake ")
    assert says in line and "\n" not in line
    assert "Traceback" not in log
