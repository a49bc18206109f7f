"""A child on another agent followed by push as well as by the stream: real ``accord serve``
processes with authentication on, and the official SDK's server.

A's follow waits an hour between attempts (``retry_base_s`` and ``poll_interval_s``), so once
its stream to B is cut only B's push can bring it back in time: B is killed while its turn
works on A's sub-task, comes back, finishes the turn, and pushes — A's parent resumes with the
result. A forged push (no token, a wrong one, an unknown stand-in) is refused and changes
nothing; the push config is gone from B once the stand-in is over."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.harness.delegation_proc import A_ENV, a_config, b_config, rpc
from tests.harness.harness_proc import HarnessServer, start
from tests.harness.test_delegation_processes import (
    B_AS_A,
    brief,
    get,
    refs,
    remote_of,
    said,
    send,
    spawn_call,
    told,
)
from tests.processes import free_port
from tests.waiting import eventually

from sdk_servers.fixtures import sdk_echo_server

pytestmark = pytest.mark.processes

SLOW = "[harness.delivery]\nretry_base_s = 3600\nretry_max_s = 3600\npoll_interval_s = 3600\n"
LOOPBACK_PUSH = 'push_allow_hosts = ["127.0.0.1/32"]\n'
REFUSED = {"error": "unknown stand-in or wrong token"}


def configs_on(url: str, task_id: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    listed: dict[str, Any] = rpc(url, "ListTaskPushNotificationConfigs", {"taskId": task_id},
                                 headers)  # fmt: skip
    configs: list[dict[str, Any]] = listed.get("configs", [])
    return configs


def a_with_push_url(
    tmp_path: Path, script: list[dict[str, Any]], agents: dict[str, str], **more: Any
) -> tuple[HarnessServer, str]:
    """A, on a port chosen first so that its ``push_url`` can name it, its access log on;
    and its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    top = "access_log = true\n" + more.pop("top", "")
    config = a_config(tmp_path, script, agents, harness=f'push_url = "{url}"\n', top=top, **more)
    a = start(tmp_path, f"sqlite:///{tmp_path / 'a.db'}", config, name="a", port=port, env=A_ENV)
    return a, url


def registered(a: HarnessServer, child: str) -> dict[str, Any]:
    """The stand-in's remote state once its push config is registered there."""
    return eventually(  # type: ignore[no-any-return]
        lambda: ((r := remote_of(a, child)).get("push") or {}).get("registered") and r,
        f"{child}'s push config registered",
    )


def push(url: str, token: str | None, body: Any = None) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["X-A2A-Notification-Token"] = token
    return httpx.post(url, json=body if body is not None else {}, headers=headers, timeout=10)


def test_b_pushes_a_back_to_its_sub_task_after_a_restart_while_a_waits(tmp_path: Path) -> None:
    b_port = free_port()
    b_store = f"sqlite:///{tmp_path / 'b.db'}"
    b_settings = b_config(tmp_path, [], top=LOOPBACK_PUSH)
    b = start(tmp_path, b_store, b_settings, name="b1", port=b_port, agent="harness_agents:agent")
    script = [{"text": "", "tool_calls": [spawn_call("venue", "think 5", "b")]},
              {"text": "B is on it."}, {"text": "All booked."}]  # fmt: skip
    a, a_url = a_with_push_url(
        tmp_path, script, {"b": b.url}, delivery=SLOW, top="max_body_bytes = 1048576\n"
    )
    try:
        parent = send(a.url, [{"text": "plan"}, brief()])
        child = f"{parent['id']}.1"
        doorbell = f"{a_url}/harness/push/{child}"
        # A's stand-in registered its push config on B's task: at our doorbell, with a
        # token whose hash alone A keeps.
        remote = registered(a, child)
        [config] = configs_on(b.url, remote["task_id"], B_AS_A)
        assert config["id"] == f"accord-follow-{child}"
        assert config["url"] == doorbell
        token = config["token"]
        assert len(token) >= 32
        assert remote["push"]["token_sha256"] == hashlib.sha256(token.encode()).hexdigest()
        assert token not in str(get(a.url, child))
        # B dies while its turn works on the sub-task: A's stream breaks, and A waits an
        # hour before it tries again.
        b.kill()
        cut = eventually(lambda: (r := remote_of(a, child))["error"] and r, "A to notice")
        assert cut["state"] == "WORKING"
        # Forged pushes: refused alike, and nothing changes.
        for url, forged in [
            (doorbell, None),
            (doorbell, "not-the-token"),
            (doorbell, token[:-1]),
            (f"{a_url}/harness/push/{parent['id']}.9", token),
            (f"{a_url}/harness/push/{parent['id']}", token),
        ]:
            answer = push(url, forged)
            assert answer.status_code == 401
            assert answer.json() == REFUSED
        # The right token with a body that is no JSON object, too large, not JSON, or not
        # POSTed: refused too, with nothing read.
        assert push(doorbell, token, body=[1, 2]).status_code == 400
        large = push(doorbell, token, body={"task": {"id": "x" * 2_000_000}})
        assert large.status_code == 413
        headers = {"X-A2A-Notification-Token": token, "Content-Type": "text/plain"}
        assert httpx.post(doorbell, content=b"{}", headers=headers).status_code == 415
        assert httpx.get(doorbell, headers=headers).status_code == 405
        time.sleep(0.5)  # a window: a refused push, had it been read, would change the reference
        assert remote_of(a, child) == cut
        assert token not in a.log()
        # B comes back, finishes its turn and pushes: A reads the task there at once.
        b = start(tmp_path, b_store, b_settings, name="b2", port=b_port,
                  agent="harness_agents:agent")  # fmt: skip
        done = eventually(
            lambda: (t := get(a.url, parent["id"])) and said(t) == "All booked." and t,
            "A's parent to resume on B's push",
            timeout_s=60,
        )
        [result] = told(done)
        assert "answer to think 5" in result
        assert refs(done) == [(child, "b", "COMPLETED")]
        assert get(a.url, child)["status"]["state"] == "TASK_STATE_COMPLETED"
        assert f"POST /harness/push/{child} 204" in a.log()
        # The push config is deleted on B once the stand-in is over.
        there = remote["task_id"]
        eventually(lambda: configs_on(b.url, there, B_AS_A) == [], "the config deleted on B")
        assert token not in a.log()
    finally:
        a.stop()
        b.stop()


def test_a_delegation_without_push_url_registers_no_push_config(tmp_path: Path) -> None:
    b = start(tmp_path, f"sqlite:///{tmp_path / 'b.db'}", b_config(tmp_path, [],
              top=LOOPBACK_PUSH), name="b", agent="harness_agents:agent")  # fmt: skip
    script = [{"text": "", "tool_calls": [spawn_call("venue", "think 1", "b")]},
              {"text": "B is on it."}, {"text": "All booked."}]  # fmt: skip
    config = a_config(tmp_path, script, {"b": b.url})
    a = start(tmp_path, f"sqlite:///{tmp_path / 'a.db'}", config, name="a", env=A_ENV)
    try:
        parent = send(a.url, [{"text": "plan"}, brief()])
        child = f"{parent['id']}.1"
        eventually(lambda: said(get(a.url, parent["id"])) == "All booked.", "the result")
        remote = remote_of(a, child)
        assert "push" not in remote or remote["push"] is None
        assert configs_on(b.url, remote["task_id"], B_AS_A) == []
        # No doorbell is served without push_url.
        answer = push(f"{a.url}/harness/push/{child}", "anything")
        assert answer.status_code == 404
    finally:
        a.stop()
        b.stop()


def test_the_official_sdk_server_pushes_to_the_doorbell(tmp_path: Path) -> None:
    """The SDK's push sender POSTs each event (its StreamResponse JSON) with the token: the
    doorbell takes it as a ring only, and the config is deleted there at the end."""
    with sdk_echo_server(push_sender=True) as echo:
        script = [{"text": "", "tool_calls": [spawn_call("echo", "slow:3", "echo")]},
                  {"text": "Asked the echo agent."}, {"text": "Got an echo."}]  # fmt: skip
        a, a_url = a_with_push_url(tmp_path, script, {"echo": echo.url}, credentials='"none"')
        try:
            parent = send(a.url, [{"text": "go"}, brief()])
            child = f"{parent['id']}.1"
            remote = registered(a, child)

            def echo_rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
                body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
                answer = httpx.post(f"{echo.url}/a2a/jsonrpc", json=body,
                                    headers={"A2A-Version": "1.0"}, timeout=10)  # fmt: skip
                return answer.json()  # type: ignore[no-any-return]

            found = echo_rpc(
                "GetTaskPushNotificationConfig",
                {"taskId": remote["task_id"], "id": f"accord-follow-{child}"},
            )
            assert found["result"]["url"] == f"{a_url}/harness/push/{child}"
            done = eventually(
                lambda: (t := get(a.url, parent["id"])) and said(t) == "Got an echo." and t,
                "the echo's result",
            )
            [result] = told(done)
            assert "echo: slow:3" in result
            # The SDK's pushes (its StreamResponse JSON, the token in its header) were taken.
            eventually(lambda: f"POST /harness/push/{child} 204" in a.log(), "a push taken")
            assert "POST /harness/push/" + child + " 401" not in a.log()

            def listed() -> list[Any]:
                found = echo_rpc("ListTaskPushNotificationConfigs", {"taskId": remote["task_id"]})
                return found["result"].get("configs", [])  # type: ignore[no-any-return]

            eventually(lambda: listed() == [], "the config deleted there")
        finally:
            a.stop()
