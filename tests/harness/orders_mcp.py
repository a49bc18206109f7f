"""The demo's orders service (examples/harness/orders_server.py): a real MCP server for the tests
of MCP tools, run over stdio by the harness itself or, here, over streamable HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from tests.processes import free_port

ORDERS = Path(__file__).resolve().parents[2] / "examples" / "harness" / "orders_server.py"


@contextmanager
def orders_over_http(ledger: Path) -> Iterator[str]:
    """The orders service on a free port, writing each call to `ledger`; yields its MCP URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(ORDERS), "--http", str(port)],
        env={**os.environ, "ORDERS_LEDGER": str(ledger)},
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(url, timeout=0.5)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the MCP server did not start"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)
