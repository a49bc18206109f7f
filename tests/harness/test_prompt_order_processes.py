"""The prompt follows the task's order, with real processes: ``accord serve --agent harness``
on a fake OpenAI-compatible server that streams its answer to "second" slowly, while "third"
comes and joins the running turn. The answer to "second" sits right after "second" — in the
next request to the model and in the task's history — "third" comes after it, and the request
ends with "third", never with an assistant message."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from tests.harness.fake_openai import FakeOpenAI, Reply
from tests.harness.harness_proc import start
from tests.harness.test_model_outage_processes import prompt
from tests.harness.test_model_turns_processes import get, said, send, settings
from tests.waiting import eventually

pytestmark = pytest.mark.processes


def test_a_message_that_joins_a_streaming_answer_comes_after_it(tmp_path: Path) -> None:
    release = threading.Event()
    with FakeOpenAI() as fake:
        fake.replies.extend(
            [
                Reply(["First answer."]),
                # The answer to "second": its first token, then the rest once "third" is in.
                Reply(["Answer ", "to ", "second."], held_until=release),
                Reply(["Answer to third."]),
            ]
        )
        config = settings(tmp_path, "openai:fake-model", fake.base_url)
        server = start(tmp_path, f"sqlite:///{tmp_path / 't.db'}", config, grpc=False)
        try:
            task = send(server, "first")
            with ThreadPoolExecutor(2) as pool:
                second = pool.submit(send, server, "second", task["id"])
                eventually(lambda: len(fake.sent_at) == 2, "the answer to second to begin")
                third = pool.submit(send, server, "third", task["id"])

                def joined() -> bool:
                    history = get(server, task["id"])["history"]
                    return any(m["parts"][0].get("text") == "third" for m in history)

                eventually(joined, "third to be stored")
                release.set()
                answered = third.result(timeout=60)
                second.result(timeout=60)
            history = get(server, task["id"])["history"]
        finally:
            release.set()
            server.stop()
    assert said(answered) == "Answer to third."
    assert len(fake.requests) == 3
    assert prompt(fake.requests[2]) == [
        ("user", "[alice] first"),
        ("assistant", "First answer."),
        ("user", "[alice] second"),
        ("assistant", "Answer to second."),
        ("user", "[alice] third"),
    ]
    assert [(m["role"], m["parts"][0]["text"]) for m in history] == [
        ("ROLE_USER", "first"),
        ("ROLE_AGENT", "First answer."),
        ("ROLE_USER", "second"),
        ("ROLE_AGENT", "Answer to second."),
        ("ROLE_USER", "third"),
        ("ROLE_AGENT", "Answer to third."),
    ]
