"""``accord serve --log-format json``: every line a JSON object with the request id, task id
and trace id; a request's lines carry its ids; no configured secret, push token or webhook
credential ever appears, even where a client put one in a path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.processes import free_port, wait_serving
from tests.waiting import eventually

pytestmark = pytest.mark.processes

TOKEN = "bearer-secret-0123456789abcdef"
API_KEY = "api-key-secret-0123456789abcdef"
PUSH_TOKEN = "push-token-secret-98765"
PUSH_CREDENTIALS = "webhook-credentials-secret-4321"
WEBHOOK_PATH_SECRET = "path-secret-13579"
SECRETS = [TOKEN, API_KEY, PUSH_TOKEN, PUSH_CREDENTIALS, WEBHOOK_PATH_SECRET]
TRACE = "0af7651916cd43dd8448eb211c80319c"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port = free_port()
    config = tmp_path / "accord.toml"
    config.write_text(
        f"""
push_allow_hosts = ["127.0.0.1"]
push_max_attempts = 1
[bearer_tokens]
"{TOKEN}" = {{ identity = "alice", tenant = "acme" }}
[api_keys]
"{API_KEY}" = {{ identity = "bob", tenant = "acme" }}
"""
    )
    log_path = tmp_path / "server.log"
    command = [
        sys.executable, "-m", "accord", "serve", "--port", str(port), "--store", "memory://",
        "--config", str(config), "--log-format", "json", "--log-level", "debug", "--access-log",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=os.environ)
    url = f"http://127.0.0.1:{port}"
    wait_serving(url, process, log_path.read_text, path="/healthz")
    try:
        yield url, log_path
    finally:
        process.terminate()
        process.wait(15)


def _lines(log_path: Path) -> list[dict[str, object]]:
    text = log_path.read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_json_lines_carry_the_ids_and_never_a_secret(server: tuple[str, Path]) -> None:
    url, log_path = server
    headers = {
        "A2A-Version": "1.0",
        "Authorization": f"Bearer {TOKEN}",
        "X-Request-Id": "req-42",
        "traceparent": f"00-{TRACE}-b7ad6b7169203331-01",
    }
    hook = f"http://127.0.0.1:{free_port()}/{WEBHOOK_PATH_SECRET}?token={PUSH_TOKEN}"
    body = {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {
            "taskPushNotificationConfig": {
                "url": hook,
                "token": PUSH_TOKEN,
                "authentication": {"scheme": "Basic", "credentials": PUSH_CREDENTIALS},
            }
        },
    }
    task = httpx.post(f"{url}/message:send", json=body, headers=headers).json()["task"]
    # refused credentials, and a client that put a secret in the path
    httpx.get(f"{url}/tasks", headers={"A2A-Version": "1.0", "X-API-Key": API_KEY + "x"})
    httpx.get(f"{url}/tasks/{TOKEN}", headers={"A2A-Version": "1.0", "X-API-Key": API_KEY})
    eventually(lambda: "is failing" in log_path.read_text(), "the webhook's failure logged")

    text = log_path.read_text()
    for secret in SECRETS:
        assert secret not in text, secret
    lines = _lines(log_path)
    assert lines and all({"request_id", "task_id", "trace_id"} <= line.keys() for line in lines)
    [send] = [line for line in lines if "op=SendMessage" in str(line["message"])]
    assert send["request_id"] == "req-42"
    assert send["trace_id"] == TRACE
    assert send["task_id"] == task["id"]
    failing = [line for line in lines if "is failing" in str(line["message"])]
    assert failing and failing[0]["task_id"] == task["id"]


def test_with_tracing_on_every_request_line_carries_its_spans_trace_id(tmp_path: Path) -> None:
    """``tracing = "console"`` and JSON logs, a client that sends no ``traceparent``: each
    request's lines (the access log's, written after its span ended, included) carry the
    trace id of the request's span; the spans go to standard error, standard output stays
    empty."""
    port = free_port()
    config = tmp_path / "accord.toml"
    config.write_text('tracing = "console"\n')
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    command = [
        sys.executable, "-m", "accord", "serve", "--port", str(port), "--store", "memory://",
        "--config", str(config), "--log-format", "json", "--access-log",
    ]  # fmt: skip
    with out_path.open("wb") as out, err_path.open("wb") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=os.environ)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(url, process, err_path.read_text, path="/healthz")
        headers = {"A2A-Version": "1.0"}
        message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        task = httpx.post(f"{url}/message:send", json={"message": message}, headers=headers)
        task_id = task.json()["task"]["id"]
        stream_body = {"message": {**message, "messageId": "m-2"}}
        with httpx.stream("POST", f"{url}/message:stream", json=stream_body, headers=headers) as r:
            r.read()

        def access_lines() -> list[dict[str, object]]:
            found = []
            for line in err_path.read_text().splitlines():
                if line.startswith('{"time"'):
                    parsed = json.loads(line)
                    if parsed["logger"] == "accord.access" and "op=" in str(parsed["message"]):
                        found.append(parsed)
            return found if len(found) >= 2 else []

        send, streamed = eventually(access_lines, "the two requests' access lines")
    finally:
        process.terminate()
        process.wait(15)
    spans = err_path.read_text()
    assert out_path.read_text() == ""  # the spans went to standard error
    for line in (send, streamed):
        assert isinstance(line["trace_id"], str) and len(line["trace_id"]) == 32
        assert f'"trace_id": "0x{line["trace_id"]}"' in spans  # its span's
    assert send["trace_id"] != streamed["trace_id"]
    assert send["task_id"] == task_id
    assert streamed["task_id"]  # a new task's id, known from the stream's first event
