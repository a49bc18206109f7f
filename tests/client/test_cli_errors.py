"""What the ``accord`` client commands say when something goes wrong, against a live
``accord serve``: timeouts name the task and how to follow it, URLs are checked (and the
httpie shorthand understood), a closed output pipe ends the command without a word."""

from __future__ import annotations

import signal
import subprocess

import pytest
from accord_server import ACCORD, TOKEN, AccordServer
from cli_run import accord, json_out


def _port(server: AccordServer) -> str:
    return server.url.rsplit(":", 1)[1]


def _cancel(server: AccordServer, task_id: str) -> None:
    accord("tasks", "cancel", server.url, task_id)


def test_send_timeout_names_the_task_and_how_to_follow_it(accord_server: AccordServer) -> None:
    url = accord_server.url
    result = accord("send", url, "slow:30", "--timeout", "2")
    assert result.returncode == 3
    line = result.stderr.strip()
    assert len(result.stderr.splitlines()) == 1
    assert line.startswith("accord: gave up after 2 s (--timeout); task ")
    task_id = line.split("; task ", 1)[1].split(" ", 1)[0]
    assert line.endswith(f"follow it with: accord tasks subscribe {url} {task_id}")
    # the id is the real task's, still going on at the agent
    shown = json_out(accord("tasks", "get", url, task_id, "--json"))
    assert shown["status"]["state"] == "TASK_STATE_WORKING"
    _cancel(accord_server, task_id)
    as_json = accord("send", url, "slow:30", "--timeout", "2", "--json")
    error = json_out(as_json)["error"]
    assert as_json.returncode == 3 and error["name"] == "RequestTimeoutError"
    assert error["taskId"] and error["taskId"] in error["message"]
    _cancel(accord_server, error["taskId"])


def test_max_time_bounds_a_stream_and_says_how_to_follow_the_task(
    accord_server: AccordServer,
) -> None:
    url = accord_server.url
    streamed = accord("stream", url, "slow:30", "--max-time", "2")
    assert streamed.returncode == 3
    task_id = streamed.stdout.split()[1]  # "task <id> submitted"
    assert streamed.stderr == (
        f"accord: gave up after 2 s (--max-time); task {task_id} goes on at the agent "
        f"(last seen working): follow it with: accord tasks subscribe {url} {task_id}\n"
    )
    followed = accord("tasks", "subscribe", url, task_id, "--max-time", "1")
    assert followed.returncode == 3
    assert f"follow it with: accord tasks subscribe {url} {task_id}" in followed.stderr
    _cancel(accord_server, task_id)


def test_stream_timeout_bounds_silence_not_the_whole_stream(accord_server: AccordServer) -> None:
    # The agent is silent for 3 s, but the server's keep-alives (every second here) are data:
    # --timeout 2 does not cut the stream.
    result = accord("stream", accord_server.url, "slow:3", "--timeout", "2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "→ completed"


def test_shorthand_urls_like_httpie(accord_server: AccordServer) -> None:
    port = _port(accord_server)
    for short in (f":{port}", f"localhost:{port}", f"127.0.0.1:{port}"):
        result = accord("send", short, "short")
        assert result.returncode == 0, (short, result.stderr)
        assert "echo: short" in result.stdout


@pytest.mark.processes
def test_an_invalid_url_is_one_line_and_exit_2() -> None:
    result = accord("card", "http://::1:9999", token=False)
    assert result.returncode == 2
    assert result.stderr == (
        "accord: invalid URL 'http://::1:9999': an IPv6 address goes in brackets: "
        "http://[::1]:9999\n"
    )
    for bad in ("http://127.0.0.1:99999", "ftp://example.com", "http://"):
        refused = accord("card", bad, token=False)
        assert refused.returncode == 2, bad
        assert refused.stderr.startswith(f"accord: invalid URL {bad!r}: ")
        assert len(refused.stderr.splitlines()) == 1, refused.stderr


def test_a_closed_pipe_ends_the_command_quietly(accord_server: AccordServer) -> None:
    # `accord stream URL chunks:5 | head -1`: the reader goes away after the first line.
    process = subprocess.Popen(
        [ACCORD, "stream", accord_server.url, "chunks:5", "--token", TOKEN],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().startswith(b"task ")
    process.stdout.close()
    assert process.wait(timeout=30) == 141
    assert process.stderr.read().decode() == ""


def test_a_grpc_port_is_named_and_the_binding_flag_given(accord_server: AccordServer) -> None:
    card = json_out(accord("card", accord_server.url, "--json"))
    grpc = next(i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC")
    result = accord("send", f"http://{grpc['url'].split('://')[-1]}", "hello")
    assert result.returncode == 3
    assert len(result.stderr.splitlines()) == 1
    assert "this is a gRPC port: use --binding grpc" in result.stderr
    assert "RemoteProtocolError" not in result.stderr


def test_the_max_time_message_starts_on_its_own_line(accord_server: AccordServer) -> None:
    url = accord_server.url
    command = [ACCORD, "stream", url, "chunks:30", "--max-time", "2", "--token", TOKEN]
    # standard output and standard error on one pipe, as on a terminal
    result = subprocess.run(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60
    )
    assert result.returncode == 3
    lines = result.stdout.splitlines()
    task_id = lines[0].split()[1]
    assert lines[-2].startswith("  [echo] chunk 0;chunk 1;")  # cut mid-line
    assert not lines[-2].endswith("chunk 29;")
    assert lines[-1].startswith("accord: gave up after 2 s (--max-time); task ")
    _cancel(accord_server, task_id)


def test_ctrl_c_on_stream_says_how_to_follow_the_task(accord_server: AccordServer) -> None:
    url = accord_server.url
    watcher = subprocess.Popen(
        [ACCORD, "stream", url, "slow:30", "--token", TOKEN],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watcher.stdout is not None
        task_id = watcher.stdout.readline().split()[1]  # "task <id> submitted"
        assert watcher.stdout.readline().strip() == "→ working"
        watcher.send_signal(signal.SIGINT)
        _, err = watcher.communicate(timeout=30)
    finally:
        watcher.kill()
    assert watcher.returncode == 130
    assert err == (
        f"accord: interrupted; task {task_id} goes on at the agent (last seen working): "
        f"follow it with: accord tasks subscribe {url} {task_id}\n"
    )
    _cancel(accord_server, task_id)
