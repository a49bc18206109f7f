"""``accord serve`` as a subprocess on a free loopback port, started and awaited from async
tests (the webhook receiver runs in the test's event loop, which must not be blocked)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from tests.processes import free_port

ACCORD = Path(sys.executable).with_name("accord")
HERE = Path(__file__).resolve().parent

PUSH_CONFIG = """
push_allow_hosts = ["127.0.0.1"]
push_timeout_s = 1.0
push_retry_base_s = 0.05
push_retry_max_s = 0.2
push_poll_interval_s = 0.2
"""


@asynccontextmanager
async def accord_serve(
    workdir: Path, agent: str, config: str = PUSH_CONFIG
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """The server's base URL and process; a SQLite store in ``workdir`` (kept across runs)."""
    port = free_port()
    config_path = workdir / "accord.toml"
    config_path.write_text(config)
    python_path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": python_path}
    command = [
        str(ACCORD),
        "serve",
        "--port",
        str(port),
        "--agent",
        agent,
        "--store",
        f"sqlite:///{workdir / 'tasks.db'}",
        "--config",
        str(config_path),
        "--log-level",
        "warning",
    ]
    with (workdir / f"server-{port}.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            *command, stdout=log, stderr=asyncio.subprocess.STDOUT, env=env
        )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(600):
                assert process.returncode is None, "accord serve exited"
                try:
                    if (await client.get(f"{url}/.well-known/agent-card.json")).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.05)
        yield url, process
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()
