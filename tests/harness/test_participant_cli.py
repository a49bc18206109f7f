"""Participants from the command line, with the real ``accord`` against ``accord serve
--agent harness``: ``send --participant`` briefs a new conversation with them, ``--data`` with
``--data-media-type`` sends the harness's envelope as written, and ``participants list | add |
remove`` read and change them (an admin's envelope underneath; anyone else is refused)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.harness.harness_proc import HarnessServer, accord, harness_serve

pytestmark = pytest.mark.processes

EVENT_MEDIA_TYPE = "application/vnd.tiny-harness.event+json"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HarnessServer]:
    with harness_serve(tmp_path_factory.mktemp("participants-cli"), grpc=False) as started:
        yield started


def started(server: HarnessServer, *args: str) -> str:
    """A new conversation's task id (``accord send … --json``)."""
    sent = accord("send", server.url, *args, "--json")
    assert sent.returncode == 0, sent.stderr
    task_id: str = json.loads(sent.stdout)["task"]["id"]
    return task_id


def rows(shown: str) -> list[list[str]]:
    """A printed table's rows, as their cells' words."""
    return [line.replace("│", " ").split() for line in shown.splitlines()]


def roles(server: HarnessServer, task_id: str, who: str) -> dict[str, tuple[str, str]]:
    listed = accord("participants", "list", server.url, task_id, "--as", who, "--json")
    assert listed.returncode == 0, listed.stderr
    people: list[dict[str, Any]] = json.loads(listed.stdout)["participants"]
    return {person["id"]: (person["role"], person["kind"]) for person in people}


def test_send_briefs_a_conversation_with_its_participants(server: HarnessServer) -> None:
    task_id = started(
        server,
        "plan the offsite",
        "--as", "alice",
        "--participant", "bob:admin",
        "--participant", "carol",
        "--participant", "helper:assignee:agent",
    )  # fmt: skip
    assert roles(server, task_id, "carol") == {
        "alice": ("reporter", "human"),
        "bob": ("admin", "human"),
        "carol": ("watcher", "human"),
        "helper": ("assignee", "agent"),
    }
    shown = accord("participants", "list", server.url, task_id, "--as", "bob")
    assert shown.returncode == 0, shown.stderr
    assert [row[:3] for row in rows(shown.stdout) if "bob" in row] == [["bob", "admin", "human"]]
    # A stranger is told what an unknown task gets.
    stranger = accord("participants", "list", server.url, task_id, "--as", "mallory")
    assert stranger.returncode == 1 and "not found" in stranger.stderr


def test_data_is_sent_with_the_media_type_given(server: HarnessServer) -> None:
    brief = {"kind": "task", "payload": {"name": "n", "goal": "g", "participants": [
        {"id": "bob", "kind": "human", "role": "watcher"}]}}  # fmt: skip
    task_id = started(
        server,
        "hello",
        "--as", "alice",
        "--data", json.dumps(brief),
        "--data-media-type", EVENT_MEDIA_TYPE,
    )  # fmt: skip
    assert roles(server, task_id, "bob")["bob"] == ("watcher", "human")
    # As application/json (the default), the same data is a plain part: nobody is briefed.
    plain = started(server, "hello", "--as", "alice", "--data", json.dumps(brief))
    assert set(roles(server, plain, "alice")) == {"alice", "accord"}


def test_an_admin_adds_changes_and_removes_participants(server: HarnessServer) -> None:
    task_id = started(server, "plan", "--as", "alice", "--participant", "alice:admin")
    added = accord(
        "participants", "add", server.url, task_id, "bob", "--role", "reporter", "--as", "alice"
    )
    assert added.returncode == 0, added.stderr
    assert ["bob", "reporter", "human"] in rows(added.stdout)
    # bob now speaks in the conversation.
    said = accord("send", server.url, "hi", "--as", "bob", "--task", task_id)
    assert said.returncode == 0, said.stderr
    # Only an admin changes them; the change is refused as the server words it.
    refused = accord("participants", "add", server.url, task_id, "carol", "--as", "bob")
    assert refused.returncode == 1, refused.stdout
    assert "only an admin" in refused.stderr
    promoted = accord("participants", "add", server.url, task_id, "bob", "--role", "admin",
                      "--as", "alice", "--json")  # fmt: skip
    assert promoted.returncode == 0, promoted.stderr
    assert roles(server, task_id, "bob")["bob"] == ("admin", "human")
    removed = accord("participants", "remove", server.url, task_id, "alice", "--as", "bob")
    assert removed.returncode == 0, removed.stderr
    assert set(roles(server, task_id, "bob")) == {"bob", "accord"}
    gone = accord("tasks", "get", server.url, task_id, "--as", "alice")
    assert gone.returncode == 1 and "not found" in gone.stderr
    nobody = accord("participants", "remove", server.url, task_id, "zed", "--as", "bob")
    assert nobody.returncode == 2
    assert nobody.stderr.strip() == f"accord: zed is not a participant of task {task_id}"


def test_participant_flags_are_checked_before_sending(server: HarnessServer) -> None:
    on_a_task = accord("send", server.url, "hi", "--as", "alice", "--task", "t1",
                       "--participant", "bob")  # fmt: skip
    assert on_a_task.returncode == 2
    assert "accord participants add URL t1 ID" in on_a_task.stderr
    typo = accord("send", server.url, "hi", "--as", "alice", "--participant", "bob:admn")
    assert typo.returncode == 2 and "unknown role 'admn'" in typo.stderr
