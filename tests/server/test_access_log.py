"""The access log: off by default; on, one line per request with method, path, status,
duration, operation and task id, and never a credential or a query value."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import httpx
import pytest
from server_helpers import Serve, message, rpc
from tests.interop.accord_server_proc import accord_serve

from accord.app._settings import Principal, load

SECRET = "access-log-bearer-0123456789"
QUERY_SECRET = "query-secret-9876543210"
AUTH = {
    "bearer_tokens": {SECRET: Principal("alice")},
    "client_options": {"headers": {"Authorization": f"Bearer {SECRET}"}},
}
DURATION = r"\d+\.\dms"


def access_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "accord.access"]


async def test_off_by_default(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with serve(**AUTH) as http:
        await rpc(http, "SendMessage", {"message": message("quiet")})
    assert access_lines(caplog) == []


async def test_a_line_per_request(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="accord.access")
    async with serve(access_log=True, **AUTH) as http:
        sent = await rpc(http, "SendMessage", {"message": message("logged")})
        task_id = sent["result"]["task"]["id"]
        await http.get(f"/tasks/{task_id}", params={"historyLength": "1", "key": QUERY_SECRET})
        streamed = await http.post("/message:stream", json={"message": message("streamed")})
        data = [line for line in streamed.text.splitlines() if line.startswith("data: ")]
        first = json.loads(data[0].removeprefix("data: "))
        refused = await http.get("/tasks", headers={"Authorization": "Bearer wrong-0123456789"})
        assert refused.status_code == 401
        await http.get("/tasks/evil%0Aline")
        await http.get("/healthz")
    lines = access_lines(caplog)
    assert re.fullmatch(rf"POST / 200 {DURATION} op=SendMessage task={task_id}", lines[0])
    assert re.fullmatch(rf"GET /tasks/{task_id} 200 {DURATION} op=GetTask task={task_id}", lines[1])
    new_id = first["task"]["id"]  # a streamed new task: its id from the first event
    assert re.fullmatch(
        rf"POST /message:stream 200 {DURATION} op=SendStreamingMessage task={new_id}", lines[2]
    )
    assert re.fullmatch(rf"GET /tasks 401 {DURATION} op=ListTasks", lines[3])
    assert re.fullmatch(
        rf"GET /tasks/evil\\nline 404 {DURATION} op=GetTask task=evil\\nline", lines[4]
    )
    assert re.fullmatch(rf"GET /healthz 200 {DURATION}", lines[5])
    assert len(lines) == 6
    everything = "\n".join(lines)
    assert SECRET not in everything and QUERY_SECRET not in everything
    assert "historyLength" not in everything and "wrong-0123456789" not in everything


def test_the_setting_and_its_sources(tmp_path: Path) -> None:
    assert load(None).access_log is False
    config = tmp_path / "accord.toml"
    config.write_text("access_log = true\n")
    assert load(str(config)).access_log is True
    assert load(str(config), {"access_log": False}).access_log is False


@pytest.mark.processes
def test_accord_serve_access_log_flag(tmp_path: Path) -> None:
    with accord_serve(tmp_path, "echo", args=("--access-log",)) as server:
        assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
    # shown although --log-level is warning: asked for explicitly
    assert re.search(rf"accord\.access: GET /healthz 200 {DURATION}", server.log())
