"""``accord serve --processes N``: the setting, what it is refused with, and the supervisor's
pure policy (backoff, crash loop), the children's inheritance and their log lines. The
processes themselves: tests/scaleout/test_processes.py."""

from __future__ import annotations

import io
import json
import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import accord
from accord.app._settings import load
from accord.cli._main import main
from accord.cli._process_policy import (
    BACKOFF_FIRST_S,
    BACKOFF_MAX_S,
    CRASH_EXITS,
    CRASH_WINDOW_S,
    Restarts,
    refusal,
)
from accord.cli._processes import (
    LISTEN_FDS,
    METRICS_DIR,
    PARENT_FD,
    PROCESS,
    child_argv,
    worker_from_env,
)
from accord.config import ConfigError
from accord.server import ListenError, adopt
from accord.telemetry import _logs as logs

PG = "postgresql://accord@db.example/accord"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("ACCORD_"):
            monkeypatch.delenv(name)


# --- the setting ----------------------------------------------------------------------------


def test_processes_is_1_unless_the_file_the_environment_or_the_flag_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load(None).processes == 1
    config = tmp_path / "accord.toml"
    config.write_text("processes = 4\n")
    assert load(str(config)).processes == 4
    monkeypatch.setenv("ACCORD_PROCESSES", "3")
    assert load(str(config)).processes == 3
    assert load(str(config), {"processes": 2}).processes == 2


@pytest.mark.parametrize("value", ["0", "-1", "257", "two", "1.5"])
def test_a_number_of_processes_out_of_range_is_refused_naming_the_variable(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCORD_PROCESSES", value)
    with pytest.raises(ConfigError, match=r"^ACCORD_PROCESSES: "):
        load(None)


def test_the_file_s_value_is_refused_naming_the_file(tmp_path: Path) -> None:
    config = tmp_path / "accord.toml"
    config.write_text("processes = 0\n")
    with pytest.raises(ConfigError, match=r"accord\.toml: processes: expected a number of"):
        load(str(config))


def test_serve_refuses_a_bad_flag_with_exit_2_naming_it() -> None:
    result = CliRunner().invoke(main, ["serve", "--processes", "0", "--store", "memory://"])
    assert result.exit_code == 2
    assert "--processes: expected a number of processes from 1 to 256, got 0" in result.output


@pytest.mark.parametrize(
    ("store", "why"),
    [
        ("memory://", "a memory store lives in one process"),
        ("sqlite:///x.db", "a SQLite store is held by one process at a time"),
    ],
)
def test_serve_refuses_a_store_the_processes_cannot_share_before_it_binds(
    store: str, why: str
) -> None:
    # The port is taken: had serve bound before refusing, it would exit 3, not 2.
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        result = CliRunner().invoke(
            main, ["serve", "--processes", "2", "--store", store, "--port", port]
        )
    assert result.exit_code == 2, result.output
    assert "processes = 2 needs a store the processes share (postgresql://" in result.output
    assert why in result.output


def test_serve_refuses_processes_with_grpc_saying_why() -> None:
    result = CliRunner().invoke(
        main, ["serve", "--processes", "2", "--store", PG, "--grpc-port", "50051"]
    )
    assert result.exit_code == 2, result.output
    assert "cannot share the inherited HTTP socket" in result.output


def test_the_supervisor_refuses_a_public_address_without_credentials_before_any_child() -> None:
    result = CliRunner().invoke(
        main, ["serve", "--processes", "2", "--store", PG, "--host", "0.0.0.0"]
    )
    assert result.exit_code == 2, result.output
    assert "refusing to serve without authentication on a non-loopback address" in result.output


def test_refusal_admits_postgresql_only_and_anything_with_one_process() -> None:
    assert refusal(2, PG, None) is None
    assert refusal(8, "postgres://db/accord", None) is None
    assert refusal(1, "memory://", 50051) is None
    assert refusal(1, "sqlite:///x.db", None) is None
    assert "not one they share" in (refusal(2, "redis://x", None) or "")
    assert "gRPC" in (refusal(2, PG, 50051) or "")


def test_the_asgi_entry_refuses_several_processes() -> None:
    with pytest.raises(ConfigError, match=r"accord\.asgi: processes = 2"):
        accord.asgi(store="memory://", processes=2)


# --- the restart policy ---------------------------------------------------------------------


def test_backoff_doubles_from_half_a_second_up_to_ten() -> None:
    restarts = Restarts(2)
    now, delays = 0.0, []
    for _ in range(8):
        # Each run lasts a few seconds: quick exits in a row, but never 5 within 30 s.
        started, now = now, now + 8.0
        delay = restarts.exited(1, started, now)
        assert delay is not None
        delays.append(delay)
        now += delay
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]
    assert delays[0] == BACKOFF_FIRST_S and max(delays) == BACKOFF_MAX_S


def test_a_process_that_served_a_while_starts_its_backoff_over() -> None:
    restarts = Restarts(1)
    assert restarts.exited(1, 0.0, 1.0) == 0.5
    assert restarts.exited(1, 1.5, 2.0) == 1.0
    assert restarts.exited(1, 3.0, 3.0 + CRASH_WINDOW_S) == 0.5  # it ran the whole window


def test_five_exits_of_one_process_within_30_s_are_a_crash_loop() -> None:
    restarts = Restarts(2)
    answers = [restarts.exited(1, t, t + 0.1) for t in range(CRASH_EXITS)]
    assert None not in answers[:-1]
    assert answers[-1] is None


def test_exits_of_different_processes_do_not_add_up_to_a_crash_loop() -> None:
    restarts = Restarts(3)
    answers = [restarts.exited(1 + i % 3, i, i + 0.1) for i in range(CRASH_EXITS + 1)]
    assert None not in answers


def test_exits_older_than_the_window_leave_it() -> None:
    restarts = Restarts(1)
    for t in (0.0, 1.0, 2.0, 3.0):
        assert restarts.exited(1, t - 0.1, t) is not None
    # The fifth exit, but those at 0 s and 1 s are more than 30 s old: 3 in the window.
    assert restarts.exited(1, 30.9, 31.0) is not None
    assert restarts.exited(1, 31.4, 31.5) is not None  # 2, 3, 31, 31.5
    assert restarts.exited(1, 31.9, 32.0) is not None  # 3, 31, 31.5, 32 (2 s left)
    assert restarts.exited(1, 32.4, 32.5) is None  # 3, 31, 31.5, 32, 32.5


# --- what a child inherits ------------------------------------------------------------------


def test_not_a_child_without_the_variables() -> None:
    assert worker_from_env({}) is None


def test_a_child_reads_and_removes_its_variables() -> None:
    environ = {LISTEN_FDS: "5,6", PROCESS: "2", PARENT_FD: "7", "OTHER": "x"}
    worker = worker_from_env(environ)
    assert worker is not None
    assert (worker.index, worker.fds, worker.parent_fd) == (2, [5, 6], 7)
    assert worker.metrics_dir is None  # (each process then reports for itself)
    assert environ == {"OTHER": "x"}  # a program the child starts does not inherit them
    environ = {LISTEN_FDS: "5", PROCESS: "1", PARENT_FD: "7", METRICS_DIR: "/run/m"}
    worker = worker_from_env(environ)
    assert worker is not None and worker.metrics_dir == "/run/m"
    assert environ == {}


@pytest.mark.parametrize(
    "values",
    [
        {LISTEN_FDS: "five", PROCESS: "1", PARENT_FD: "7"},
        {LISTEN_FDS: "5", PARENT_FD: "7"},
        {LISTEN_FDS: "5", PROCESS: "0", PARENT_FD: "7"},
        {LISTEN_FDS: "-5", PROCESS: "1", PARENT_FD: "7"},
    ],
)
def test_malformed_variables_are_refused(values: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match=LISTEN_FDS):
        worker_from_env(dict(values))


def test_serve_refuses_malformed_inherited_variables_with_exit_2() -> None:
    env = {LISTEN_FDS: "x", PROCESS: "1", PARENT_FD: "3"}
    result = CliRunner().invoke(main, ["serve", "--store", "memory://"], env=env)
    assert result.exit_code == 2, result.output
    assert f"{LISTEN_FDS}, {PROCESS} and {PARENT_FD} are set by accord serve --processes" in (
        result.output
    )


def test_a_child_whose_descriptor_is_no_socket_exits_3() -> None:
    read, write = os.pipe()
    try:
        env = {LISTEN_FDS: str(read), PROCESS: "1", PARENT_FD: str(read)}
        result = CliRunner().invoke(main, ["serve", "--store", "memory://"], env=env)
        assert result.exit_code == 3, result.output
        assert f"inherited descriptor {read}: not a socket" in result.output
    finally:
        os.close(read)
        os.close(write)


def test_a_child_runs_serve_with_the_supervisor_s_flags() -> None:
    argv = child_argv(
        "/etc/accord.toml",
        {"port": 8080, "store": PG, "agent": None, "access_log": False, "processes": 2},
    )
    assert argv[1:4] == ["-m", "accord", "serve"]
    assert argv[4:] == [
        "--config", "/etc/accord.toml",
        "--port", "8080",
        "--store", PG,
        "--no-access-log",
        "--processes", "2",
    ]  # fmt: skip


def test_a_child_adopts_the_listening_socket_it_inherited() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listening:
        [adopted] = adopt([os.dup(listening.fileno())])
        with adopted:
            assert adopted.getsockname() == listening.getsockname()
            assert not adopted.getblocking()


def test_a_descriptor_that_is_not_a_socket_is_refused() -> None:
    read, write = os.pipe()
    try:
        with pytest.raises(ListenError, match=f"inherited descriptor {read}: not a socket"):
            adopt([read])
    finally:
        os.close(read)
        os.close(write)


# --- log lines ------------------------------------------------------------------------------


@pytest.fixture
def root_logging() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    out = io.StringIO()
    yield out
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved:
        root.addHandler(handler)
    root.setLevel(level)


def _captured(out: io.StringIO) -> None:
    # configure() writes to stderr; point its handler here.
    [handler] = logging.getLogger().handlers
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(out)


def test_a_child_s_text_lines_name_its_number_and_pid(root_logging: io.StringIO) -> None:
    logs.configure("info", "text", process=3)
    _captured(root_logging)
    logging.getLogger("accord.test").info("hello")
    assert f"INFO [process 3 pid {os.getpid()}] accord.test: hello" in root_logging.getvalue()


def test_a_child_s_json_lines_carry_process_and_pid(root_logging: io.StringIO) -> None:
    logs.configure("info", "json", process=2)
    _captured(root_logging)
    logging.getLogger("accord.test").info("hello")
    line = json.loads(root_logging.getvalue())
    assert (line["process"], line["pid"], line["message"]) == (2, os.getpid(), "hello")


def test_a_single_process_s_lines_do_not(root_logging: io.StringIO) -> None:
    logs.configure("info", "text")
    _captured(root_logging)
    logging.getLogger("accord.test").info("hello")
    assert "[process" not in root_logging.getvalue()
