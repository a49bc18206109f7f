"""The documented command serves an example agent:
``PYTHONPATH=. accord serve --agent examples.multi_turn:agent`` from the repository root."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
from accord_server_proc import accord_serve

ROOT = Path(__file__).resolve().parents[2]


def test_the_multi_turn_example_is_served(tmp_path: Path) -> None:
    with (
        accord_serve(tmp_path, "examples.multi_turn:agent", cwd=ROOT, python_path=(".",)) as server,
        httpx.Client(base_url=server.url, headers={"A2A-Version": "1.0"}) as http,
    ):

        def send(text: str, **ids: str) -> dict[str, object]:
            msg = {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": text}],
                **ids,
            }
            response = http.post("/message:send", json={"message": msg})
            assert response.status_code == 200, response.text
            task: dict[str, object] = response.json()["task"]
            return task

        first = send("book a table")
        assert first["status"] == {**first["status"], "state": "TASK_STATE_INPUT_REQUIRED"}
        done = send("2", taskId=str(first["id"]))
        assert done["status"] == {**done["status"], "state": "TASK_STATE_COMPLETED"}
