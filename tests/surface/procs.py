"""Subprocesses for the remote-agent tests: ``accord serve --agent remote`` and
``examples/remote_worker.py`` workers whose JSON lines are collected."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.processes import free_port, wait_serving

ROOT = Path(__file__).resolve().parents[2]
ACCORD = Path(sys.executable).with_name("accord")
WORKER = ROOT / "examples" / "remote_worker.py"

CLIENT_KEY = "client-key-0123456789abcdef"
WORKER_KEY = "worker-key-0123456789abcdef"
OTHER_CLIENT_KEY = "other-tenant-client-key-0123456789"
OTHER_WORKER_KEY = "other-tenant-worker-key-0123456789"

CONFIG = f"""
heartbeat_s = 1.0
claim_lease_s = {{lease}}

[[principals]]
identity = "client"
actors = ["a2a.tasks.Client", "a2a.discovery.Client"]
api_key = "{CLIENT_KEY}"

[[principals]]
identity = "worker"
actors = ["a2a.tasks.Agent"]
api_key = "{WORKER_KEY}"

[[principals]]
identity = "other-client"
tenant = "other"
actors = ["a2a.tasks.Client"]
api_key = "{OTHER_CLIENT_KEY}"

[[principals]]
identity = "other-worker"
tenant = "other"
actors = ["a2a.tasks.Agent"]
api_key = "{OTHER_WORKER_KEY}"
"""


@contextmanager
def remote_server(workdir: Path, lease_s: float = 30.0) -> Iterator[str]:
    port = free_port()
    config = workdir / "accord.toml"
    config.write_text(CONFIG.replace("{lease}", str(lease_s)))
    log = (workdir / "serve.log").open("wb")
    command = [str(ACCORD), "serve", "--agent", "remote", "--port", str(port)]
    command += ["--store", f"sqlite:///{workdir / 'accord.db'}", "--config", str(config)]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(url, process, (workdir / "serve.log").read_text, 30)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@dataclass
class WorkerProcess:
    process: subprocess.Popen[bytes]
    lines: queue.Queue[dict[str, Any]] = field(default_factory=queue.Queue)
    seen: list[dict[str, Any]] = field(default_factory=list)

    def wait_for(self, key: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for line in self.seen:
                if key in line:
                    return line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {key!r} line; saw {self.seen[-5:]}")
            try:
                self.seen.append(self.lines.get(timeout=remaining))
            except queue.Empty:
                continue

    def drain(self) -> list[dict[str, Any]]:
        while True:
            try:
                self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                return self.seen

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _pump(process: subprocess.Popen[bytes], lines: queue.Queue[dict[str, Any]]) -> None:
    assert process.stdout is not None
    for raw in process.stdout:
        try:
            lines.put(json.loads(raw))
        except ValueError:
            continue


def start_worker(url: str, name: str, work_seconds: float = 0.0) -> WorkerProcess:
    command = [sys.executable, str(WORKER), "--url", url, "--api-key", WORKER_KEY]
    command += ["--name", name, "--work-seconds", str(work_seconds)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE)
    worker = WorkerProcess(process)
    threading.Thread(target=_pump, args=(process, worker.lines), daemon=True).start()
    return worker
