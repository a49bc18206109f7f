"""The dashboard of an accord server mounted in a FastAPI application (``accord.asgi``,
docs/server.md), in a real browser: its page, its reads, its live table and a task's timeline
all go below the prefix, and each mounted agent's dashboard shows its own tasks only."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect
from tests.processes import ServerProcess, free_port, wait_serving

HERE = Path(__file__).resolve().parent
WAIT_MS = 15_000  # how long an expectation may wait (a bound, not a measurement)

pytestmark = [pytest.mark.processes, pytest.mark.browser]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    log_path = tmp_path / "host.log"
    command = [
        sys.executable, "-m", "uvicorn", "mounted_host:app",
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=HERE)
    server = ServerProcess(process, log_path)
    try:
        wait_serving(url, process, server.log, 30, path="/agents/echo/.well-known/agent-card.json")
        yield url
    finally:
        server.stop()


def send(url: str, text: str) -> dict[str, Any]:
    body = {
        "message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    }
    answer = httpx.post(f"{url}/message:send", json=body, headers={"A2A-Version": "1.0"})
    assert answer.status_code == 200, answer.text
    task: dict[str, Any] = answer.json()["task"]
    return task


def test_the_mounted_dashboard_reads_and_follows_below_its_prefix(host: str, page: Page) -> None:
    echo, stream = f"{host}/agents/echo", f"{host}/agents/stream"
    first = send(echo, "before the page")
    elsewhere = send(stream, "another agent's")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{echo}/ui")  # redirected below the prefix
    expect(page.locator(f'#tasks tr[data-task-id="{first["id"]}"]')).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
    later = send(echo, "while it is open")  # comes over the change stream
    expect(page.locator(f'#tasks tr[data-task-id="{later["id"]}"]')).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(f'#tasks tr[data-task-id="{elsewhere["id"]}"]')).to_have_count(0)
    page.goto(f"{echo}/ui/#/task/{later['id']}")
    expect(page.locator("#timeline")).to_contain_text("while it is open", timeout=WAIT_MS)
    same_origin = [url for url in requests if url.startswith(host)]
    assert same_origin and all(url.startswith(f"{echo}/") for url in same_origin), same_origin
