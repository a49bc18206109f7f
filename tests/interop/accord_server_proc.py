"""Run ``accord serve`` as a subprocess on a free loopback port for the interop tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.processes import free_port, wait_serving

HERE = Path(__file__).resolve().parent
ACCORD = Path(sys.executable).with_name("accord")

BEARER_TOKEN = "interop-token"  # authenticates the extended-card call (require_auth is off)

CONFIG = f"""
extended_card = true
require_auth = false
heartbeat_s = 1.0

[bearer_tokens]
"{BEARER_TOKEN}" = {{ identity = "interop-tester" }}
"""


@dataclass(frozen=True)
class AccordServer:
    url: str
    log_path: Path
    process: subprocess.Popen[bytes]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def serve_command(
    workdir: Path, port: int, agent: str = "accord_test_agents:agent", settings: str = ""
) -> list[str]:
    """``accord serve`` on ``port`` with the SQLite file and settings file of ``workdir``
    (``settings``: more lines before the settings' tables)."""
    config = workdir / "accord.toml"
    config.write_text(settings + CONFIG)
    return [
        str(ACCORD),
        "serve",
        "--port",
        str(port),
        "--store",
        f"sqlite:///{workdir / 'tasks.db'}",
        "--agent",
        agent,
        "--config",
        str(config),
        "--log-level",
        "warning",
    ]


def serve_env(python_path: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment of ``accord serve``: the test agents (and ``python_path``) importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [*python_path, str(HERE), env.get("PYTHONPATH")])
    )
    return env


@contextmanager
def accord_serve(
    workdir: Path,
    agent: str = "accord_test_agents:agent",
    startup_timeout: float = 30.0,
    *,
    cwd: Path | None = None,
    python_path: tuple[str, ...] = (),
    args: tuple[str, ...] = (),
    settings: str = "",
) -> Iterator[AccordServer]:
    """``accord serve`` with a SQLite store in ``workdir``, the test agents importable, and the
    extended card configured (``args``: more flags, ``settings``: more settings); stopped (and
    waited for) on exit."""
    port = free_port()
    command = [*serve_command(workdir, port, agent, settings), *args]
    log_path = workdir / "server.log"
    env = serve_env(python_path)
    with log_path.open("wb") as log:  # a file, not a pipe: a full pipe would block the server
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(url, process, log_path.read_text, startup_timeout)
        yield AccordServer(url, log_path, process)
    finally:
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
