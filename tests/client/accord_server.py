"""Run ``accord serve`` (memory store, test agents, bearer auth, gRPC) behind a cutting proxy."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cutting_proxy import CuttingProxy, cutting_proxy
from tests.processes import free_port, wait_serving

HERE = Path(__file__).resolve().parent
ACCORD = str(Path(sys.executable).with_name("accord"))
TOKEN = "client-test-token"
CONFIG = f"""
[accord]
extended_card = true
heartbeat_s = 1.0

[accord.bearer_tokens]
"{TOKEN}" = "tester"
"""


@dataclass(frozen=True)
class AccordServer:
    url: str  # through the proxy; the card advertises this address
    proxy: CuttingProxy


@contextmanager
def accord_serve() -> Iterator[AccordServer]:
    port, grpc_port = free_port(), free_port()
    with (
        tempfile.TemporaryDirectory() as tmp,
        cutting_proxy(port) as proxy,
        Path(tmp, "serve.log").open("wb") as log,
    ):
        config = Path(tmp, "accord.toml")
        config.write_text(CONFIG)
        pythonpath = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
        process = subprocess.Popen(
            [
                ACCORD, "serve",
                "--port", str(port),
                "--grpc-port", str(grpc_port),
                "--store", "memory://",
                "--agent", "accord_agents:slow_echo",
                "--config", str(config),
                "--public-url", f"http://127.0.0.1:{proxy.port}",
                "--log-level", "warning",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": pythonpath},
        )  # fmt: skip
        try:
            wait_serving(f"http://127.0.0.1:{port}", process, Path(tmp, "serve.log").read_text, 30)
            yield AccordServer(f"http://127.0.0.1:{proxy.port}", proxy)
        finally:
            process.terminate()
            process.wait(10)
