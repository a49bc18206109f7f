"""The offline demo (examples/harness/demo.toml) runs as the README says: a scripted support
conversation that plans, looks the order up on the demo's MCP server, asks, and ships a
replacement, with every call in the orders server's ledger; its question comes with a form
(an A2UI surface)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest
from tests.harness.harness_proc import ACCORD
from tests.processes import free_port, wait_serving

pytestmark = pytest.mark.processes

REPO = Path(__file__).resolve().parents[2]
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json", "X-Participant-Id": "alice"}


def send(url: str, text: str, task_id: str = "") -> dict[str, object]:
    message: dict[str, object] = {"messageId": text, "role": "ROLE_USER", "parts": [{"text": text}]}
    if task_id:
        message["taskId"] = task_id
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    answer = httpx.post(url, json=body, headers=HEADERS, timeout=60).json()
    assert "result" in answer, answer
    task: dict[str, object] = answer["result"]["task"]
    return task


def test_the_offline_demo_runs_as_documented(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "demo.log"
    # The demo as it is, its paths made absolute so that it runs here (the orders server
    # writes its ledger in the working directory).
    config = (REPO / "examples/harness/demo.toml").read_text()
    config = config.replace('"examples/', f'"{REPO}/examples/').replace(
        "scripted:examples/", f"scripted:{REPO}/examples/"
    )
    (tmp_path / "demo.toml").write_text(config)
    command = [str(ACCORD), "serve", "--agent", "harness", "--config", "demo.toml",
               "--store", "memory://", "--port", str(port), "--log-level", "warning"]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=tmp_path, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(url, process, log.read_text, 30)
        first = send(url, "my blender order 48213 arrived cracked")
        status = first["status"]  # type: ignore[index]
        assert "Would you like a refund or a replacement?" in json.dumps(status)
        # The question comes with a form (A2UI): a choice and a Confirm button.
        [form] = first["artifacts"]  # type: ignore[misc]
        assert (form["name"], form["artifactId"]) == ("a2ui", "a2ui:1")
        assert [next(k for k in p["data"] if k != "version") for p in form["parts"]] == [
            "createSurface",
            "updateComponents",
            "updateDataModel",
        ]
        done = send(url, "a replacement please", str(first["id"]))
        assert "a replacement blender ships today" in json.dumps(done["status"])
        plan = done["metadata"]["io.github.madarauchiha-314.tiny-harness/task"]["plan"]  # type: ignore[index]
        assert [step["state"] for step in plan["steps"]] == ["done", "done", "done"]
    finally:
        process.terminate()
        process.wait(10)
    ledger = (tmp_path / "orders-ledger.jsonl").read_text().splitlines()
    calls = [json.loads(line)["tool"] for line in ledger]
    assert calls == ["get_order", "ship_replacement"]
