"""What the ``accord`` client commands print, against a live ``accord serve``: ids whole in a
narrow terminal, empty results said so, one page of tasks and the way to the next, messages
from standard input with data and file parts, the card's security; and ``accord --help``
without loading the client or the server."""

from __future__ import annotations

import json
import os
import pty
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest
from accord_server import ACCORD, TOKEN, AccordServer
from cli_run import accord, json_out

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def in_terminal(*args: str, columns: int) -> str:
    """``accord ARGS`` with its output on a terminal ``columns`` wide, as a person sees it."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50", "TERM": "xterm"}
    process = subprocess.Popen(
        [ACCORD, *args, "--token", TOKEN],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert process.wait(timeout=60) == 0
    return _ANSI.sub("", b"".join(chunks).decode()).replace("\r", "")


def test_ids_are_never_cut_in_a_narrow_terminal(accord_server: AccordServer) -> None:
    sent = json_out(accord("send", accord_server.url, "narrow", "--json"))["task"]
    shown = in_terminal(
        "tasks", "list", accord_server.url, "--context-id", sent["contextId"], columns=40
    )
    assert sent["id"] in shown and sent["contextId"] in shown
    assert "…" not in shown
    hook = "https://hooks.example.com/a2a/with/a/long/path"
    added = json_out(accord("push", "add", accord_server.url, sent["id"], hook, "--json"))
    configs = in_terminal("push", "list", accord_server.url, sent["id"], columns=40)
    assert added["id"] in configs and sent["id"] in configs and hook in configs


def test_empty_results_say_so(accord_server: AccordServer) -> None:
    none = accord("tasks", "list", accord_server.url, "--context-id", "no-such-context")
    assert none.returncode == 0 and none.stdout == "no tasks\n"
    sent = json_out(accord("send", accord_server.url, "lonely", "--json"))["task"]
    configs = accord("push", "list", accord_server.url, sent["id"])
    assert configs.returncode == 0 and configs.stdout == f"no push configs for task {sent['id']}\n"


def test_tasks_list_shows_a_page_and_how_to_get_the_next(accord_server: AccordServer) -> None:
    url = accord_server.url
    first = json_out(accord("send", url, "page 1", "--json"))["task"]
    context = first["contextId"]
    ids = [first["id"]]
    for text in ("page 2", "page 3"):
        ids.append(
            json_out(accord("send", url, text, "--context-id", context, "--json"))["task"]["id"]
        )
    page = accord("tasks", "list", url, "--context-id", context, "--page-size", "2")
    assert page.returncode == 0, page.stderr
    lines = page.stdout.splitlines()
    assert "2 of 3 tasks" in lines
    [more] = [line for line in lines if line.startswith("next page: ")]
    command = shlex.split(more.removeprefix("next page: "))
    assert command[:4] == ["accord", "tasks", "list", url]
    assert "--page-token" in command and "--context-id" in command
    rest = accord(*command[1:])
    assert rest.returncode == 0, rest.stderr
    assert "next page" not in rest.stdout
    shown = [task_id for task_id in ids if task_id in page.stdout + rest.stdout]
    assert sorted(shown) == sorted(ids)  # every task once, over the two pages
    as_json = json_out(
        accord("tasks", "list", url, "--context-id", context, "--page-size", "2", "--json")
    )
    assert len(as_json["tasks"]) == 2 and as_json["nextPageToken"] and as_json["totalSize"] == 3
    every = json_out(
        accord("tasks", "list", url, "--context-id", context, "--page-size", "2", "--all", "--json")
    )
    assert sorted(t["id"] for t in every["tasks"]) == sorted(ids) and every["nextPageToken"] == ""


def test_send_reads_the_text_from_stdin(accord_server: AccordServer) -> None:
    result = accord("send", accord_server.url, "-", stdin="from a pipe\n")
    assert result.returncode == 0, result.stderr
    assert "echo: from a pipe" in result.stdout


def test_send_data_file_parts_and_metadata(accord_server: AccordServer, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"line one\nline two\n")
    result = accord(
        "send",
        accord_server.url,
        "see attached",
        "--data",
        '{"priority": 2, "tags": ["a"]}',
        "--file",
        str(notes),
        "--metadata",
        '{"source": "cli-test"}',
        "--json",
    )
    assert result.returncode == 0, result.stderr
    [sent] = json_out(result)["task"]["history"]
    assert sent["metadata"] == {"source": "cli-test"}
    text, data, file = sent["parts"]
    assert text == {"text": "see attached"}
    assert data["data"] == {"priority": 2, "tags": ["a"]}
    assert file["filename"] == "notes.txt" and file["mediaType"] == "text/plain"
    assert file["raw"] == "bGluZSBvbmUKbGluZSB0d28K"  # base64 of the file's bytes
    streamed = accord("stream", accord_server.url, "--data", '{"only": "data"}', "--json")
    assert streamed.returncode == 0, streamed.stderr
    bad = accord("send", accord_server.url, "x", "--metadata", "[1]")
    assert bad.returncode == 2 and "expected a JSON object" in bad.stderr
    nothing = accord("send", accord_server.url)
    assert nothing.returncode == 2 and "nothing to send" in nothing.stderr


def test_card_shows_the_security_schemes(accord_server: AccordServer) -> None:
    shown = accord("card", accord_server.url, token=False)
    assert shown.returncode == 0, shown.stderr
    [row] = [line for line in shown.stdout.splitlines() if "HTTP Bearer" in line]
    assert "bearer" in row and "--token TOKEN or $ACCORD_TOKEN" in row
    assert "required: bearer" in shown.stdout.splitlines()


# --- start-up --------------------------------------------------------------------------------

HEAVY = (
    *("grpc", "httpx", "msgspec", "rich", "asyncpg", "uvicorn", "uvloop"),
    *("accord.server", "accord.client", "accord.wire", "accord.store", "accord.engine"),
    "accord.push",
    *("textual", "accord.chat", "accord.dashboard"),
)


@pytest.mark.processes
def test_help_and_version_load_neither_client_nor_server() -> None:
    code = (
        "import json, sys\n"
        "from accord.cli._main import main\n"
        "for args in (['--help'], ['--version']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out.splitlines()[-1])
    assert "click" in loaded
    heavy = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == []
    assert "send" in out and "accord, version" in out


def test_the_help_listing_matches_the_commands() -> None:
    from accord.cli._main import LAZY_COMMANDS, main

    ctx = click.Context(main)
    for name, lazy in LAZY_COMMANDS.items():
        command = main.get_command(ctx, name)
        assert command is not None
        assert lazy.short_help == command.get_short_help_str(limit=1000), name
