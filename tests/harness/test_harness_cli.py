"""The real ``accord`` command in a conversation with ``accord serve --agent harness``:
``--as`` names the participant, ``--task`` continues the conversation, ``accord complete``
sends the complete control, and the sub-state shows beside INPUT_REQUIRED."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.harness.harness_proc import HarnessServer, accord, harness_serve

pytestmark = pytest.mark.processes


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HarnessServer]:
    with harness_serve(tmp_path_factory.mktemp("harness-cli"), grpc=False) as started:
        yield started


def test_a_conversation_from_the_command_line(server: HarnessServer) -> None:
    first = accord("send", server.url, "plan the offsite", "--as", "alice")
    assert first.returncode == 0, first.stderr
    line = first.stdout.splitlines()[0]
    task_id = line.split()[1]
    assert line == f"task {task_id} input-required (awaiting-next-message): answer 1"
    again = accord("send", server.url, "two days", "--as", "alice", "--task", task_id)
    assert again.stdout.splitlines()[0].endswith("(awaiting-next-message): answer 2")
    streamed = accord("stream", server.url, "in June", "--as", "alice", "--task", task_id)
    assert streamed.returncode == 0, streamed.stderr
    assert "(awaiting-next-message): answer 3" in streamed.stdout
    # Someone else cannot even see it; nobody asserted is refused as such.
    stranger = accord("tasks", "get", server.url, task_id, "--as", "mallory")
    assert stranger.returncode == 1 and "not found" in stranger.stderr
    nobody = accord("send", server.url, "hi")
    assert nobody.returncode == 1 and "no participant asserted" in nobody.stderr
    done = accord("complete", server.url, task_id, "--as", "alice")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"task {task_id} completed: completed by alice"
