"""``accord serve --agent harness`` as a real process: a scripted model, a settings file and
a store of the test's choosing, gRPC on a port of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.processes import ServerProcess, free_port, wait_serving

ACCORD = Path(sys.executable).with_name("accord")
HERE = Path(__file__).resolve().parent
SCRIPT = [{"text": f"answer {n}"} for n in range(1, 50)]


def accord(*args: str) -> subprocess.CompletedProcess[str]:
    """The real ``accord`` command, its output captured."""
    return subprocess.run([str(ACCORD), *args], capture_output=True, text=True, timeout=60)


@dataclass
class HarnessServer(ServerProcess):
    url: str
    grpc_port: int


def write_settings(
    workdir: Path, extra: str = "", script: list[dict[str, object]] | None = None
) -> Path:
    script_path = workdir / "script.json"
    script_path.write_text(json.dumps(script if script is not None else SCRIPT))
    config = workdir / "harness.toml"
    config.write_text(f'[harness]\nagent_id = "accord"\nmodel = "scripted:{script_path}"\n{extra}')
    return config


def start(
    workdir: Path,
    store: str,
    config: Path,
    *,
    name: str = "server",
    grpc: bool = True,
    agent: str = "harness",
    port: int | None = None,
    env: dict[str, str] | None = None,
) -> HarnessServer:
    """``accord serve`` of ``agent`` (the built-in harness, or a module of this folder's),
    on ``port`` (default: a free one), with ``env`` added to its environment."""
    port, grpc_port = port or free_port(), free_port()
    log_path = workdir / f"{name}.log"
    command = [
        str(ACCORD), "serve",
        "--agent", agent,
        "--config", str(config),
        "--store", store,
        "--port", str(port),
        "--log-level", "info",
    ]  # fmt: skip
    if grpc:
        command += ["--grpc-port", str(grpc_port)]
    with log_path.open("wb") as log:  # a file, not a pipe: a full pipe would block the server
        environ = {**os.environ, **(env or {})}
        paths = [str(HERE), environ.get("PYTHONPATH")]
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environ)
    server = HarnessServer(process, log_path, f"http://127.0.0.1:{port}", grpc_port)
    try:
        wait_serving(server.url, process, server.log, 30)
    except RuntimeError:
        server.stop()
        raise
    return server


@contextmanager
def harness_serve(
    workdir: Path, store: str | None = None, *, extra: str = "", grpc: bool = True
) -> Iterator[HarnessServer]:
    config = write_settings(workdir, extra)
    server = start(workdir, store or f"sqlite:///{workdir / 'tasks.db'}", config, grpc=grpc)
    try:
        yield server
    finally:
        server.stop()
