"""``accord serve`` as a real process: one that fails to start (its exit status and everything
it printed), or one that serves (its URL, read from its log, since these run on port 0)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ACCORD = [sys.executable, "-m", "accord", "serve"]
LISTENING = re.compile(r"listening on (http://\S+)")


@dataclass(frozen=True)
class Ended:
    status: int
    output: str  # stdout and stderr together

    @property
    def lines(self) -> list[str]:
        return self.output.splitlines()


def serve_fails(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Ended:
    """Run ``accord serve`` expecting it to end by itself (the timeout only guards a hang)."""
    ended = subprocess.run(
        [*ACCORD, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
        check=False,
    )
    return Ended(ended.returncode, ended.stdout)


@dataclass(frozen=True)
class Served:
    url: str  # http://host:port, as the server logged it
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def serving(*args: str, cwd: Path) -> Iterator[Served]:
    """``accord serve --port 0 …`` until it logs the address it listens on; stopped on exit."""
    log_path = cwd / "serve.log"
    with log_path.open("wb") as log:  # a file, not a pipe: a full pipe would block the server
        process = subprocess.Popen(
            [*ACCORD, "--port", "0", "--log-level", "info", *args],
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while not (found := LISTENING.search(log_path.read_text(errors="replace"))):
            assert process.poll() is None, log_path.read_text(errors="replace")
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        yield Served(found.group(1), log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
