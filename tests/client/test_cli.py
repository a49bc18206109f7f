"""The real ``accord`` command against a live ``accord serve``: output and exit codes."""

from __future__ import annotations

import json
import subprocess

import pytest
from accord_server import ACCORD, TOKEN, AccordServer
from cli_run import accord, json_out
from tests.processes import free_port


def test_card(accord_server: AccordServer) -> None:
    shown = accord("card", accord_server.url, token=False)
    assert shown.returncode == 0, shown.stderr
    assert "accord agent" in shown.stdout
    assert "JSONRPC" in shown.stdout and "HTTP+JSON" in shown.stdout and "GRPC" in shown.stdout
    as_json = json_out(accord("card", accord_server.url, "--json", token=False))
    assert as_json["name"] == "accord agent"
    assert as_json["capabilities"]["streaming"] is True
    extended = accord("card", accord_server.url, "--extended", "--json")
    assert extended.returncode == 0 and json_out(extended)["name"]


def test_send_prints_the_answer(accord_server: AccordServer) -> None:
    result = accord("send", accord_server.url, "hello cli")
    assert result.returncode == 0, result.stderr
    assert "completed" in result.stdout and "echo: hello cli" in result.stdout
    data = json_out(accord("send", accord_server.url, "hello json", "--json"))
    assert data["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert data["task"]["artifacts"][0]["parts"] == [{"text": "echo: hello json"}]


def test_send_waits_for_each_turn_of_a_conversation(accord_server: AccordServer) -> None:
    asked = accord("send", accord_server.url, "ask")
    assert asked.returncode == 0, asked.stderr
    first = asked.stdout.splitlines()[0]
    assert first.startswith("task ") and first.endswith(" input-required: what else?")
    task_id = first.split()[1]
    answered = accord("send", accord_server.url, "the blue one", "--task-id", task_id)
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.splitlines()[0] == f"task {task_id} completed"
    assert "echo: the blue one" in answered.stdout


def test_failed_task_exits_4(accord_server: AccordServer) -> None:
    result = accord("send", accord_server.url, "fail")
    assert result.returncode == 4
    assert "failed: asked to fail" in result.stdout
    # only the commands that wait for a task judge how it ended (docs/client.md)
    task_id = result.stdout.split()[1]
    shown = accord("tasks", "get", accord_server.url, task_id)
    assert shown.returncode == 0 and "failed: asked to fail" in shown.stdout
    # a task that has ended is printed as it ended, and judged as if followed to its end
    followed = accord("tasks", "subscribe", accord_server.url, task_id)
    assert followed.returncode == 4, followed.stderr
    assert followed.stdout.splitlines()[0] == f"task {task_id} failed: asked to fail"


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
def test_subscribing_to_a_task_that_has_ended_prints_it(
    accord_server: AccordServer, binding: str
) -> None:
    task_id = json_out(accord("send", accord_server.url, "done", "--json"))["task"]["id"]
    followed = accord("tasks", "subscribe", accord_server.url, task_id, "--binding", binding)
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout.splitlines()[0] == f"task {task_id} completed"
    assert "[echo] echo: done" in followed.stdout
    as_json = accord("tasks", "subscribe", accord_server.url, task_id, "--json")
    assert as_json.returncode == 0
    assert json_out(as_json)["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
def test_stream_renders_states_and_chunks_live(accord_server: AccordServer, binding: str) -> None:
    result = accord("stream", accord_server.url, "chunks:3", "--binding", binding)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("task ") and lines[0].endswith(" submitted")
    assert lines[1:] == ["→ working", "  [echo] chunk 0;chunk 1;chunk 2;", "→ completed"]


def test_stream_json_is_one_event_per_line(accord_server: AccordServer) -> None:
    result = accord("stream", accord_server.url, "hi", "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [next(iter(e)) for e in events] == [
        "task",
        "statusUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_tasks_list_and_get(accord_server: AccordServer) -> None:
    sent = json_out(accord("send", accord_server.url, "listed", "--json"))["task"]
    listed = accord("tasks", "list", accord_server.url, "--context-id", sent["contextId"], "--json")
    assert [t["id"] for t in json_out(listed)["tasks"]] == [sent["id"]]
    table = accord("tasks", "list", accord_server.url, "--status", "completed")
    assert table.returncode == 0 and sent["id"] in table.stdout
    shown = accord("tasks", "get", accord_server.url, sent["id"])
    assert shown.returncode == 0 and sent["id"] in shown.stdout and "echo: listed" in shown.stdout
    assert (
        json_out(accord("tasks", "get", accord_server.url, sent["id"], "--json"))["id"]
        == sent["id"]
    )


def test_tasks_subscribe_and_cancel(accord_server: AccordServer) -> None:
    started = json_out(accord("send", accord_server.url, "slow", "--no-wait", "--json"))["task"]
    watcher = subprocess.Popen(
        [ACCORD, "tasks", "subscribe", accord_server.url, started["id"], "--token", TOKEN],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # the watcher prints the task's current state first; wait for it before canceling
        assert watcher.stdout is not None
        first = watcher.stdout.readline()
        assert first.startswith(f"task {started['id']}")
        canceled = accord("tasks", "cancel", accord_server.url, started["id"])
        assert canceled.returncode == 0 and "canceled" in canceled.stdout
        rest, _ = watcher.communicate(timeout=30)
    finally:
        watcher.kill()
    assert watcher.returncode == 4  # the task ended CANCELED
    assert rest.splitlines()[-1] == "→ canceled"
    again = accord("tasks", "cancel", accord_server.url, started["id"])
    assert again.returncode == 1 and "TaskNotCancelableError" in again.stderr


def test_push_commands(accord_server: AccordServer) -> None:
    started = json_out(accord("send", accord_server.url, "slow:10", "--no-wait", "--json"))["task"]
    task_id = started["id"]
    hook = "https://hooks.example.com/a2a"
    created = json_out(accord("push", "add", accord_server.url, task_id, hook, "--json"))
    assert created["url"] == hook and created["id"]
    listed = json_out(accord("push", "list", accord_server.url, task_id, "--json"))
    assert [c["id"] for c in listed] == [created["id"]]
    table = accord("push", "get", accord_server.url, task_id, created["id"])
    assert table.returncode == 0 and hook in table.stdout
    deleted = accord("push", "delete", accord_server.url, task_id, created["id"], "--json")
    assert json_out(deleted)["deleted"] is True
    assert json_out(accord("push", "list", accord_server.url, task_id, "--json")) == []
    accord("tasks", "cancel", accord_server.url, task_id)


def test_agent_errors_are_one_line_and_exit_1(accord_server: AccordServer) -> None:
    result = accord("tasks", "get", accord_server.url, "no-such-task")
    assert result.returncode == 1
    assert result.stderr.startswith("accord: TaskNotFoundError: ")
    assert len(result.stderr.strip().splitlines()) == 1
    as_json = accord("tasks", "get", accord_server.url, "no-such-task", "--json")
    assert as_json.returncode == 1
    assert json_out(as_json)["error"]["name"] == "TaskNotFoundError"
    assert json_out(as_json)["error"]["reason"] == "TASK_NOT_FOUND"


def test_unauthenticated_error_says_how_to_pass_a_token(accord_server: AccordServer) -> None:
    anonymous = accord("tasks", "get", accord_server.url, "x", token=False)
    assert anonymous.returncode == 1
    assert anonymous.stderr == (
        "accord: UnauthenticatedError: missing or invalid credentials "
        "(pass credentials with --token TOKEN or $ACCORD_TOKEN)\n"
    )
    refused = accord("tasks", "get", accord_server.url, "x", "--token", "wrong", token=False)
    assert refused.returncode == 1
    assert "(the credentials given were refused)" in refused.stderr


@pytest.mark.processes
def test_refused_connection_names_the_address_and_asks_if_the_server_runs() -> None:
    port = free_port()  # nothing listens there
    result = accord("card", f"http://127.0.0.1:{port}", token=False)
    assert result.returncode == 3
    assert result.stderr == (
        f"accord: cannot connect to http://127.0.0.1:{port} (connection refused): "
        "is the server running?\n"
    )
    as_json = json_out(accord("card", f"http://127.0.0.1:{port}", "--json", token=False))
    assert as_json["error"]["name"] == "ConnectionFailedError"


def test_bad_usage_exits_2(accord_server: AccordServer) -> None:
    result = accord("tasks", "list", accord_server.url, "--header", "no-colon")
    assert result.returncode == 2
