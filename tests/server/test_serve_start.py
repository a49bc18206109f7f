"""What a new user hits first, on a real ``accord serve`` process: a start that cannot work
ends with one line saying why and a non-zero status (no traceback, no claim to be serving);
ports are checked; IPv6 addresses are written in brackets."""

from __future__ import annotations

import json
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_process import serve_fails, serving
from tests.processes import free_port

pytestmark = pytest.mark.processes

PLAIN_DEF = "def agent(ctx, task):\n    return None\n"
ASYNC_DEF = (
    "async def agent(ctx, task):\n"
    "    await task.start_working()\n"
    "    await task.complete('done by the module agent')\n"
)


def card_of(url: str) -> dict[str, object]:
    with urllib.request.urlopen(f"{url}/.well-known/agent-card.json", timeout=10) as response:
        card: dict[str, object] = json.loads(response.read())
        return card


def urls_of(card: dict[str, object]) -> dict[str, str]:
    interfaces = card["supportedInterfaces"]
    assert isinstance(interfaces, list)
    return {i["protocolBinding"]: i["url"] for i in interfaces}


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another process (this one) listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


# --- 3: a busy port -------------------------------------------------------------------------


@pytest.mark.parametrize("http", ["accord", "uvicorn"])
def test_a_busy_http_port_is_one_line_before_anything_starts(
    http: str, busy_port: int, tmp_path: Path
) -> None:
    ended = serve_fails(
        "--http", http, "--port", str(busy_port), "--store", "memory://", cwd=tmp_path
    )
    assert ended.status == 3
    assert ended.lines == [
        f"accord: cannot listen on 127.0.0.1:{busy_port} (HTTP): address already in use "
        "(is another server running there?)"
    ]


@pytest.mark.parametrize("http", ["accord", "uvicorn"])
def test_a_busy_grpc_port_is_one_line_before_anything_starts(
    http: str, busy_port: int, tmp_path: Path
) -> None:
    ended = serve_fails(
        "--http", http, "--port", "0", "--grpc-port", str(busy_port), "--store", "memory://",
        cwd=tmp_path,
    )  # fmt: skip
    assert ended.status == 3
    assert ended.lines == [
        f"accord: cannot listen on 127.0.0.1:{busy_port} (gRPC): address already in use "
        "(is another server running there?)"
    ]


def test_a_grpc_port_another_accord_serves_is_busy(tmp_path: Path) -> None:
    """gRPC's default SO_REUSEPORT would let the second server share the first one's port."""
    grpc_port = free_port()
    first = tmp_path / "first"
    first.mkdir()
    with serving("--grpc-port", str(grpc_port), "--store", "memory://", cwd=first):
        ended = serve_fails(
            "--port", "0", "--grpc-port", str(grpc_port), "--store", "memory://", cwd=tmp_path
        )
    assert ended.status == 3
    assert ended.lines[-1].startswith(f"accord: cannot listen on 127.0.0.1:{grpc_port} (gRPC)")


def test_the_same_port_for_http_and_grpc_is_refused(tmp_path: Path) -> None:
    """Both bound but not yet listening, the two sockets would share the port and the HTTP
    server would fail later with a bad file descriptor."""
    port = free_port()
    ended = serve_fails(
        "--port", str(port), "--grpc-port", str(port), "--store", "memory://", cwd=tmp_path
    )  # fmt: skip
    assert ended.status == 3
    assert ended.lines == [
        f"accord: the gRPC port and the HTTP port are both {port}: "
        "give gRPC a port of its own (--grpc-port)"
    ]


# --- 4: ports out of range ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "line"),
    [
        (["--port", "80000"], {}, "--port: expected a port number from 0 to 65535, got 80000"),
        (["--grpc-port", "0"], {}, "--grpc-port: expected a port number from 1 to 65535, got 0"),
        ([], {"ACCORD_PORT": "-1"}, "ACCORD_PORT: expected a port number from 0 to 65535, got -1"),
    ],
)
def test_ports_outside_their_range_are_refused(
    args: list[str], env: dict[str, str], line: str, tmp_path: Path
) -> None:
    ended = serve_fails(*args, "--store", "memory://", cwd=tmp_path, env=env)
    assert ended.status == 2
    assert ended.lines == [f"accord: {line}"]


def test_port_0_serves_on_a_free_port_and_the_card_names_it(tmp_path: Path) -> None:
    with serving("--store", "memory://", cwd=tmp_path) as served:
        assert not served.url.endswith(":0")
        card = card_of(served.url)
        assert set(urls_of(card).values()) == {served.url}
        assert f"at {served.url} " in served.log()  # the start-up line names it too


# --- 5: IPv6 ---------------------------------------------------------------------------------


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_an_ipv6_host_is_bracketed_in_every_url(tmp_path: Path) -> None:
    grpc_port = free_port("::1")
    args = ("--host", "::1", "--grpc-port", str(grpc_port), "--store", "memory://")
    with serving(*args, cwd=tmp_path) as served:
        assert served.url.startswith("http://[::1]:")
        urls = urls_of(card_of(served.url))
        log = served.log()
    assert urls == {"JSONRPC": served.url, "HTTP+JSON": served.url, "GRPC": f"[::1]:{grpc_port}"}
    assert f"at {served.url} " in log
    assert f"gRPC serving lf.a2a.v1.A2AService on [::1]:{grpc_port}" in log


# --- 6: the agent ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "line"),
    [
        (
            "plain:agent",
            "agent 'plain:agent' is a plain function (agent, not `async def`); an agent is an "
            "`async def agent(ctx, task)` function, or an object (or a class) with an "
            "`async def execute(self, ctx, task)` method",
        ),
        ("json:dumps", "agent 'json:dumps' is a plain function (dumps, not `async def`); "),
        ("os:path", "agent 'os:path' is a module ("),
        (
            "broken:agent",
            "agent 'broken:agent': importing module 'broken' failed: ModuleNotFoundError: "
            "No module named 'not_installed_anywhere'",
        ),
        ("plain:agnet", "agent 'plain:agnet': module 'plain' has no attribute 'agnet'"),
    ],
)
def test_an_agent_that_is_not_one_is_refused_at_start(
    agent: str, line: str, tmp_path: Path
) -> None:
    (tmp_path / "plain.py").write_text(PLAIN_DEF)
    (tmp_path / "broken.py").write_text("import not_installed_anywhere\n" + ASYNC_DEF)
    ended = serve_fails("--agent", agent, "--port", "0", "--store", "memory://", cwd=tmp_path)
    assert ended.status == 2
    assert len(ended.lines) == 1 and ended.lines[0].startswith(f"accord: {line}")


def test_a_module_alone_serves_its_agent_attribute(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(ASYNC_DEF)
    with serving("--agent", "mine", "--store", "memory://", cwd=tmp_path) as served:
        request = urllib.request.Request(
            f"{served.url}/message:send",
            data=json.dumps(
                {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
            ).encode(),
            headers={"content-type": "application/json", "a2a-version": "1.0"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            task = json.loads(response.read())["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["status"]["message"]["parts"] == [{"text": "done by the module agent"}]


# --- 7: settings and the store ---------------------------------------------------------------


def test_a_bad_value_in_the_settings_file_names_the_file_and_the_setting(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad.toml").write_text('port = "abc"\n')
    ended = serve_fails("--config", "bad.toml", cwd=tmp_path)
    assert ended.status == 2
    assert ended.lines == ["accord: bad.toml: port: expected an integer, got 'abc'"]


def test_a_missing_model_script_names_the_file_and_the_setting(tmp_path: Path) -> None:
    (tmp_path / "h.toml").write_text('[harness]\nmodel = "scripted:nope.json"\n')
    ended = serve_fails(
        "--agent", "harness", "--config", "h.toml", "--port", "0", "--store", "memory://",
        cwd=tmp_path,
    )  # fmt: skip
    assert ended.status == 2
    assert ended.lines == [
        "accord: h.toml: harness.model: nope.json: cannot read the model script "
        "(No such file or directory)"
    ]


def test_a_settings_file_that_is_not_toml_is_named(tmp_path: Path) -> None:
    (tmp_path / "broken.toml").write_text("port = \n")
    ended = serve_fails("--config", "broken.toml", cwd=tmp_path)
    assert ended.status == 2
    assert len(ended.lines) == 1
    assert ended.lines[0].startswith("accord: broken.toml: not valid TOML: ")


def test_a_bad_environment_variable_is_named(tmp_path: Path) -> None:
    ended = serve_fails(cwd=tmp_path, env={"ACCORD_PORT": "x"})
    assert ended.status == 2
    assert ended.lines == ["accord: ACCORD_PORT: expected an integer, got 'x'"]


def test_a_sqlite_store_that_cannot_open_is_one_line(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/missing-directory/tasks.db"
    ended = serve_fails("--port", "0", "--store", store, cwd=tmp_path)
    assert ended.status == 3
    assert len(ended.lines) == 1
    assert ended.lines[0] == (
        f"accord: cannot open {tmp_path}/missing-directory/tasks.db: the directory "
        f"{tmp_path}/missing-directory does not exist (create it first)"
    )


def test_a_relative_sqlite_path_whose_directory_is_missing_hints_at_four_slashes(
    tmp_path: Path,
) -> None:
    # sqlite:/// + var/lib/…: relative to the working directory, where var/ does not exist
    ended = serve_fails("--port", "0", "--store", "sqlite:///var/lib/accord/tasks.db", cwd=tmp_path)
    assert ended.status == 3
    assert ended.lines == [
        "accord: cannot open var/lib/accord/tasks.db: the directory var/lib/accord does not "
        "exist (sqlite:///var/lib/accord/tasks.db is a path relative to the working directory, "
        f"{tmp_path}; an absolute path takes four slashes: sqlite:////var/lib/accord/tasks.db)"
    ]


@pytest.mark.parametrize("http", ["accord", "uvicorn"])
def test_a_store_that_cannot_open_says_so_without_a_traceback(http: str, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on: the connection is refused
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    store = f"postgresql://accord@127.0.0.1:{closed}/accord"
    ended = serve_fails(
        "--http", http, "--port", "0", "--store", store, "--log-level", "warning", cwd=tmp_path
    )
    assert ended.status == 3
    assert "Traceback" not in ended.output
    failures = [line for line in ended.lines if "ERROR" in line]
    assert len(failures) == (1 if http == "accord" else 2)  # uvicorn adds "Exiting."
    assert failures[0].endswith("cannot open the PostgreSQL store: [Errno 111] Connection refused")
