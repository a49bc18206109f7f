"""What tests that start server processes share: a free port to give the server before it starts,
the wait until it serves, and the handle on a started server (its log, a clean stop, a
SIGKILL)."""

from __future__ import annotations

import signal
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from tests.waiting import eventually

CARD = "/.well-known/agent-card.json"


_GIVEN: set[int] = set()  # (ports handed out by this process: never twice)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, and one this process has not handed out before: two
    calls in a row (a server's HTTP and gRPC ports) never get the same one, which the kernel
    may otherwise return for a socket bound and closed twice."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    while True:
        with socket.socket(family) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


def wait_serving(
    url: str,
    process: subprocess.Popen[bytes],
    log: Callable[[], str],
    timeout_s: float = 60.0,
    path: str = CARD,
) -> None:
    """Once the server ``process`` started answers ``url`` + ``path`` with a success; a
    RuntimeError with the end of its ``log`` when it exits first or does not answer in time."""

    def answers() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the server exited: {log()[-3000:]}")
        try:
            return httpx.get(url + path, timeout=1).is_success
        except httpx.HTTPError:
            return False

    try:
        eventually(answers, f"{url}{path} to answer", timeout_s)
    except AssertionError as exc:
        raise RuntimeError(f"{exc}: {log()[-3000:]}") from None


# The servers the running test started: a failing test's report shows the end of their logs.
started: list[ServerProcess] = []


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    log_path: Path

    def __post_init__(self) -> None:
        started.append(self)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no cleanup, like a machine that died."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        """SIGTERM and a graceful shutdown, or SIGKILL when it does not come."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
