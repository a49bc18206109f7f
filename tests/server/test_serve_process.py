"""``accord serve`` as a process on either HTTP server: it answers A2A requests, and SIGTERM
stops it cleanly (accord's server exits 0; uvicorn re-raises the signal), with a task it
stored kept in its SQLite file."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from tests.processes import free_port

from accord.store import SqliteStore

pytestmark = pytest.mark.processes


def post(port: int, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "a2a-version": "1.0"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer: dict[str, object] = json.loads(response.read())
        return answer


@pytest.mark.parametrize("http", ["accord", "uvicorn"])
async def test_serve_answers_and_stops_cleanly_on_sigterm(http: str, tmp_path: Path) -> None:
    port = free_port()
    db = tmp_path / "serve.db"
    argv = [sys.executable, "-m", "accord", "serve", "--http", http, "--port", str(port)]
    process = subprocess.Popen(
        [*argv, "--store", f"sqlite:///{db}", "--log-level", "warning"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                card_url = f"http://127.0.0.1:{port}/.well-known/agent-card.json"
                with urllib.request.urlopen(card_url, timeout=2) as response:
                    assert json.loads(response.read())["name"]
                break
            except OSError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        sent = post(
            port,
            {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}},
        )
        task = sent["result"]["task"]  # type: ignore[index]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        process.send_signal(signal.SIGTERM)
        # uvicorn re-raises the signal after its graceful shutdown; accord's server exits 0.
        clean = {0} if http == "accord" else {0, -signal.SIGTERM}
        assert process.wait(timeout=30) in clean
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    store = SqliteStore(str(db))
    await store.open()
    try:
        stored = await store.get_task(task["id"], "")
        assert stored is not None and stored.task.status.state.name == "COMPLETED"
    finally:
        await store.close()
