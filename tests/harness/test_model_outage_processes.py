"""A model outage with real processes: ``accord serve --agent harness`` whose OpenAI-compatible
endpoint is down (nothing listens on its port), then back (a fake server on that port), on
SQLite and on PostgreSQL.

- the model down: the turn ends, never the conversation — INPUT_REQUIRED, awaiting the next
  message, a one-line status saying what failed and what to do, the kind in the metadata;
- the model back: ``/retry`` runs the failed turn again, the next message has its turn, and
  ``/retry`` refuses once nothing failed;
- a turn whose tool ran before the model went down: ``/retry`` goes on from its journal, the
  tool never runs twice;
- a delegated task fails with the same words, not the generic failure;
- ``accord serve`` warns at start of a model with no key on its provider's own endpoint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.harness.fake_openai import FakeOpenAI, Reply
from tests.harness.harness_proc import start
from tests.harness.test_model_turns_processes import get, mcp_stdio, said, send, settings
from tests.marks import POSTGRES
from tests.processes import free_port

pytestmark = pytest.mark.processes

STATUS_KEY = "io.github.madarauchiha-314.tiny-harness/status"
MODEL = "openai:gpt-fake"
DOWN = (
    f"the model {MODEL} could not be reached (connection refused, after 2 attempts); send "
    "another message or /retry"
)
KEY = {"OPENAI_API_KEY": "sk-test"}


@pytest.fixture(params=["sqlite", POSTGRES])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'tasks.db'}"
    return str(request.getfixturevalue("pg_url"))


def status(task: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = task["metadata"][STATUS_KEY]
    return found


def prompt(request: dict[str, Any]) -> list[tuple[str, str]]:
    """A Chat Completions request's messages after the system prompt: (role, text)."""
    return [
        (m["role"], m.get("content") or "") for m in request["messages"] if m["role"] != "system"
    ]


def test_a_model_outage_parks_the_turn_and_retry_and_the_next_message_work(
    tmp_path: Path, store: str
) -> None:
    port = free_port()  # nothing listens here: the model is down
    config = settings(tmp_path, MODEL, f"http://127.0.0.1:{port}/v1", extra="attempts = 2\n")
    server = start(tmp_path, store, config, grpc=False, env=KEY)
    try:
        task = send(server, "hello?")
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert said(task) == DOWN
        assert status(task) == {"sub_state": "awaiting-next-message", "reason": "model_unavailable"}
        assert "The agent failed" not in json.dumps(task)
        # /retry while the model is still down: parked again, the same way.
        again = send(server, "/retry", task["id"])
        assert (said(again), status(again)["reason"]) == (DOWN, "model_unavailable")
        with FakeOpenAI(port) as fake:  # the model is back
            fake.replies.extend([Reply(["Hello ", "there."]), Reply(["Fine, thanks."])])
            retried = send(server, "/retry", task["id"])
            assert said(retried) == "Hello there."
            assert status(retried) == {"sub_state": "awaiting-next-message"}
            following = send(server, "how are you?", task["id"])
            assert said(following) == "Fine, thanks."
            refused = send(server, "/retry", task["id"])
            assert said(refused).startswith("Nothing to retry")
            # The model read the conversation, never the failures' notes.
            first, second = fake.requests
            assert prompt(first) == [("user", "[alice] hello?")]
            assert prompt(second) == [
                ("user", "[alice] hello?"),
                ("assistant", "Hello there."),
                ("user", "[alice] how are you?"),
            ]
        history = get(server, task["id"])["history"]
        texts = [m["parts"][0]["text"] for m in history if m.get("parts")]
        assert texts == [
            "hello?",
            DOWN,
            "/retry",
            DOWN,
            "/retry",
            "Hello there.",
            "how are you?",
            "Fine, thanks.",
            "/retry",
            refused["status"]["message"]["parts"][0]["text"],
        ]
    finally:
        server.stop()
    assert "Traceback" not in server.log()


def test_retry_goes_on_from_the_journal_and_runs_no_tool_twice(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    with FakeOpenAI() as fake:
        refund = ("call_r", "orders_refund", {"order_id": 48213, "reason": "cracked"})
        # The model asks for a refund; it runs; the model is then overloaded (both attempts).
        fake.replies.extend([Reply([], tool_calls=[refund]), Reply(status=503), Reply(status=503)])
        extra = "attempts = 2\n" + mcp_stdio(ledger)
        config = settings(tmp_path, MODEL, fake.base_url, extra=extra)
        server = start(tmp_path, f"sqlite:///{tmp_path / 't.db'}", config, grpc=False, env=KEY)
        try:
            task = send(server, "refund order 48213")
            assert status(task)["reason"] == "model_unavailable"
            assert said(task).startswith(f"the model {MODEL} could not be reached (HTTP 503")
            fake.replies.append(Reply(["Refunded."]))
            retried = send(server, "/retry", task["id"])
            assert said(retried) == "Refunded."
        finally:
            server.stop()
    assert len(fake.requests) == 4  # the refund's call was not asked again
    last = fake.requests[-1]["messages"]
    assert [m["role"] for m in last if m["role"] != "system"] == ["user", "assistant", "tool"]
    refunds = [r for r in map(json.loads, ledger.read_text().splitlines()) if r["tool"] == "refund"]
    assert len(refunds) == 1


def test_a_rate_limit_past_the_bound_parks_at_once_saying_so(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.replies.append(Reply(status=429, retry_after=3600))
        config = settings(tmp_path, MODEL, fake.base_url)
        server = start(tmp_path, f"sqlite:///{tmp_path / 't.db'}", config, grpc=False, env=KEY)
        try:
            task = send(server, "hello?")
        finally:
            server.stop()
    assert len(fake.requests) == 1
    assert status(task) == {"sub_state": "awaiting-next-message", "reason": "rate_limited"}
    assert said(task).startswith(f"the model {MODEL} refused for its rate limit (HTTP 429")
    assert "it asked to wait 3600 s" in said(task)


def test_no_key_on_the_providers_own_endpoint_is_warned_of_at_start(tmp_path: Path) -> None:
    config = tmp_path / "harness.toml"
    config.write_text(f'[harness]\nmodel = "{MODEL}"\nmodels = ["anthropic:claude-fake"]\n')
    unset = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}
    server = start(tmp_path, f"sqlite:///{tmp_path / 't.db'}", config, grpc=False, env=unset)
    server.stop()
    log = server.log()
    assert f"the model {MODEL} has no key: $OPENAI_API_KEY is not set" in log
    assert "the model anthropic:claude-fake has no key: $ANTHROPIC_API_KEY is not set" in log
