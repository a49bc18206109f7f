"""``accord serve`` as a real process for the dashboard and chat tests: an agent of this
folder's (or a built-in one), a settings file of the test's, a SQLite store in the test's
folder, on a free loopback port; restartable on the same port and store."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.processes import free_port, wait_serving

ACCORD = Path(sys.executable).with_name("accord")
HERE = Path(__file__).resolve().parent


@dataclass
class Server:
    workdir: Path
    agent: str
    config: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "server.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def start(self) -> None:
        config = self.workdir / "accord.toml"
        config.write_text(self.config)
        command = [
            str(ACCORD), "serve",
            "--agent", self.agent,
            "--config", str(config),
            "--store", f"sqlite:///{self.workdir / 'tasks.db'}",
            "--port", str(self.port),
            "--log-level", "warning",
        ]  # fmt: skip
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=HERE
            )
        try:
            wait_serving(self.url, self.process, self.log, 30)
        except RuntimeError:
            self.stop()
            raise

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def serve(workdir: Path, agent: str = "echo", config: str = "") -> Iterator[Server]:
    server = Server(workdir, agent, config)
    server.start()
    try:
        yield server
    finally:
        server.stop()
