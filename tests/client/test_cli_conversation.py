"""``accord send`` in a conversation (``accord serve --agent harness`` on a fake OpenAI-compatible
model, real streaming): each command prints its own turn's reply, not the conversation's."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from accord_server import ACCORD
from tests.harness.fake_openai import FakeOpenAI, Reply
from tests.harness.harness_proc import HarnessServer, start
from tests.waiting import eventually

pytestmark = pytest.mark.processes


@contextmanager
def harness_on_fake_model(tmp: Path, extra: str = "") -> Iterator[tuple[HarnessServer, FakeOpenAI]]:
    with FakeOpenAI() as fake:
        config = tmp / "harness.toml"
        config.write_text(
            f'{extra}[harness]\nmodel = "openai:fake"\n'
            f'[harness.openai]\nbase_url = "{fake.base_url}"\n'
        )
        server = start(tmp, "memory://", config, grpc=False)
        try:
            yield server, fake
        finally:
            server.stop()


@pytest.fixture
def conversation(tmp_path: Path) -> Iterator[tuple[HarnessServer, FakeOpenAI]]:
    with harness_on_fake_model(tmp_path) as running:
        yield running


def send(url: str, text: str, task_id: str = "") -> list[str]:
    command = [ACCORD, "send", url, text, "--as", "alice"]
    if task_id:
        command += ["--task", task_id]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def background_send(url: str, text: str, task_id: str) -> subprocess.Popen[str]:
    command = [ACCORD, "send", url, text, "--as", "alice", "--task", task_id]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def history(url: str, task_id: str) -> list[str]:
    command = [ACCORD, "tasks", "get", url, task_id, "--as", "alice", "--json"]
    shown = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
    return [m["parts"][0].get("text", "") for m in json.loads(shown.stdout)["history"]]


def replies(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip().startswith("[reply]")]


def test_send_to_a_conversation_prints_this_turns_reply_once(
    conversation: tuple[HarnessServer, FakeOpenAI],
) -> None:
    server, fake = conversation
    fake.replies.extend([Reply(["answer ", "one"]), Reply(["answer ", "two"])])
    first = send(server.url, "hi")
    task_id = first[0].split()[1]
    # the answer once: the reply artifact, not again as the status message
    assert first[0] == f"task {task_id} input-required (awaiting-next-message)"
    assert replies(first) == ["[reply] answer one"]
    second = send(server.url, "again", task_id)
    assert second[0] == f"task {task_id} input-required (awaiting-next-message)"
    assert replies(second) == ["[reply] answer two"]


def test_a_message_that_joined_a_running_turn_prints_the_answers_to_it(
    conversation: tuple[HarnessServer, FakeOpenAI],
) -> None:
    server, fake = conversation
    fake.replies.append(Reply(["answer ", "one"]))
    task_id = send(server.url, "hi")[0].split()[1]
    held = threading.Event()
    fake.replies.extend([Reply(["answer ", "two"], held_until=held), Reply(["answer ", "three"])])
    first = background_send(server.url, "second", task_id)
    try:
        eventually(lambda: len(fake.sent_at) >= 3, "the model to begin its answer to 'second'")
        joined = background_send(server.url, "joining", task_id)
        try:
            eventually(lambda: history(server.url, task_id)[-1] == "joining", "the join")
            held.set()
            joined_out, joined_err = joined.communicate(timeout=60)
        finally:
            joined.kill()
        first_out, first_err = first.communicate(timeout=60)
    finally:
        held.set()
        first.kill()
    assert first.returncode == 0 and joined.returncode == 0, first_err + joined_err
    # the turn 'second' began answered twice; the message that joined it, once
    assert replies(first_out.splitlines()) == ["[reply] answer two", "[reply] answer three"]
    assert replies(joined_out.splitlines()) == ["[reply] answer three"]


def test_an_agent_that_does_not_stream_prints_this_turns_reply_too(tmp_path: Path) -> None:
    with harness_on_fake_model(tmp_path, "streaming = false\n") as (server, fake):
        fake.replies.extend([Reply(["answer ", "one"]), Reply(["answer ", "two"])])
        task_id = send(server.url, "hi")[0].split()[1]
        second = send(server.url, "again", task_id)
    assert second[0] == f"task {task_id} input-required (awaiting-next-message)"
    assert replies(second) == ["[reply] answer two"]
