"""GetTask over the JSON bindings, on SQLite (which keeps ProtoJSON snapshots) and in memory
(which keeps a task's encoding until it changes): the bytes go out unread, and they are
exactly what the task encodes to; with historyLength the task is decoded and trimmed as
before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from server_helpers import message, rpc, serve_settings


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
async def test_gettask_answers_the_same_task_both_ways_on_both_bindings(
    tmp_path: Path, kind: str
) -> None:
    store = f"sqlite:///{tmp_path / 'g.db'}" if kind == "sqlite" else "memory://"
    async with serve_settings(store=store) as http:
        sent = (await rpc(http, "SendMessage", {"message": message("one")}))["result"]["task"]
        raw = await http.post(
            "/",
            json={"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": sent["id"]}},
        )
        assert raw.content.startswith(b'{"jsonrpc":"2.0","id":7,"result":{"id":')
        task = json.loads(raw.content)["result"]
        assert task == sent  # what the blocking send answered, from the encoded record
        assert task["artifacts"][0]["parts"] == [{"text": "echo: one"}]
        # The decoded path (a historyLength that keeps everything) agrees exactly.
        decoded = await rpc(http, "GetTask", {"id": sent["id"], "historyLength": 100})
        assert decoded["result"] == task
        rest = await http.get(f"/tasks/{sent['id']}")
        assert rest.status_code == 200 and rest.json() == task
        trimmed = await rpc(http, "GetTask", {"id": sent["id"], "historyLength": 0})
        assert "history" not in trimmed["result"]
        missing = await rpc(http, "GetTask", {"id": "no-such-task"})
        assert missing["error"]["code"] == -32001
