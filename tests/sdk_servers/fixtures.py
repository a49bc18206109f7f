"""Start the SDK echo server as a subprocess on free loopback ports."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.processes import free_port, wait_serving

ECHO_SERVER = Path(__file__).with_name("echo_server.py")


@dataclass(frozen=True)
class RunningServer:
    url: str
    port: int
    grpc_port: int


@contextmanager
def sdk_echo_server(
    startup_timeout: float = 30.0, *, push_sender: bool = False
) -> Iterator[RunningServer]:
    port, grpc_port = free_port(), free_port()
    command = [sys.executable, str(ECHO_SERVER), "--port", str(port), "--grpc-port", str(grpc_port)]
    if push_sender:
        command.append("--push-sender")
    # the log goes to a file, not a pipe: a full pipe would block the server
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:

            def logged() -> str:
                log.seek(0)
                return str(log.read().decode(errors="replace"))

            wait_serving(url, process, logged, startup_timeout)
            yield RunningServer(url, port, grpc_port)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
