"""A small agent on the official JS SDK (``@a2a-js/sdk``, tests/js/agent.mjs: its express and
gRPC servers, a bearer token required) as the server, and accord as its client, over JSON-RPC,
HTTP+JSON and gRPC: accord's client library (every operation, streaming, subscribe, push
configs and the SDK's own push delivery, errors), the ``accord`` command, and the harness
delegating sub-tasks to it (``[[harness.agents]]`` with bearer credentials), followed by
stream and by push."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.harness.delegation_proc import a_config, card_server
from tests.harness.harness_proc import start
from tests.harness.test_delegation_processes import (
    brief,
    get,
    refs,
    remote_of,
    said,
    send,
    spawn_call,
    told,
)
from tests.js.peer import JsAgent, js_agent
from tests.processes import free_port
from tests.push.receiver import Receiver
from tests.waiting import eventually

from accord.client import (
    BearerToken,
    Client,
    TaskNotFoundError,
    UnauthenticatedError,
)
from accord.wire import SendMessageConfiguration, TaskPushNotificationConfig, TaskState

pytestmark = pytest.mark.processes

BINDINGS = ("JSONRPC", "HTTP+JSON", "GRPC")
TOKEN = "js-agent-token-0123456789"
ACCORD = Path(sys.executable).with_name("accord")


@pytest.fixture(scope="module")
def js(js_sdk: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JsAgent]:
    with js_agent(tmp_path_factory.mktemp("js-agent"), token=TOKEN) as agent:
        yield agent


def connect(js: JsAgent, binding: str, token: str | None = TOKEN) -> Client:
    credentials = BearerToken(token) if token else None
    return Client.connect(js.url, binding=binding, credentials=credentials)


def chunks(events: list[object]) -> list[str]:
    return [
        part.text
        for e in events
        if getattr(e, "which", None) == "artifact_update"
        for part in e.artifact_update.artifact.parts  # type: ignore[attr-defined]
    ]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_accord_client_every_operation(js: JsAgent, binding: str) -> None:
    async with connect(js, binding) as client:
        assert client.binding == binding
        task = await client.send("hello")
        assert task.status.state is TaskState.COMPLETED
        assert task.artifacts[0].parts[0].text == "echo: hello"
        assert (await client.get_task(task.id)).status.state is TaskState.COMPLETED

        events = [e async for e in client.stream("tick 3 0.02")]
        assert [e.which for e in events][:2] == ["task", "status_update"]
        assert chunks(events) == ["chunk 0;", "chunk 1;", "chunk 2;"]
        assert events[-1].status_update.status.state is TaskState.COMPLETED

        waiting = await client.send("ask")
        assert waiting.status.state is TaskState.INPUT_REQUIRED
        answered = await client.send("now", task_id=waiting.id, context_id=waiting.context_id)
        assert answered.status.state is TaskState.COMPLETED
        assert answered.artifacts[-1].parts[0].text == "got: now"

        ticking = await client.send("tick 4 0.1", return_immediately=True)
        followed = [e async for e in client.subscribe(ticking.id)]
        assert followed[0].which == "task"
        assert followed[-1].status_update.status.state is TaskState.COMPLETED

        slow = await client.send("slow", return_immediately=True)
        canceled = await client.cancel(slow.id)
        assert canceled.status.state is TaskState.CANCELED

        listed = [t.id async for t in client.list_tasks(context_id=task.context_id)]
        assert listed == [task.id]

        with pytest.raises(TaskNotFoundError):
            await client.get_task("no-such-task")
    async with connect(js, binding, token=None) as anonymous:
        with pytest.raises(UnauthenticatedError):
            await anonymous.send("hello")


@pytest.mark.parametrize("binding", BINDINGS)
async def test_push_configs_and_the_sdk_pushing_to_a_webhook(js: JsAgent, binding: str) -> None:
    async with Receiver() as hook, connect(js, binding) as client:
        slow = await client.send("slow", return_immediately=True)
        created = await client.create_push_config(slow.id, hook.url(), config_id="c1", token="t1")
        assert (created.id, created.url) == ("c1", hook.url())
        assert (await client.get_push_config(slow.id, "c1")).token == "t1"
        assert [c.id for c in await client.list_push_configs(slow.id)] == ["c1"]
        await client.delete_push_config(slow.id, "c1")
        assert await client.list_push_configs(slow.id) == []
        await client.cancel(slow.id)

        # A config that comes with the message: the SDK POSTs each event there, with the token.
        push = TaskPushNotificationConfig(url=hook.url("/ticks"), token="t2")
        configuration = SendMessageConfiguration(task_push_notification_config=push)
        ticking = await client.send("tick 2 0.05", configuration=configuration)
        assert ticking.status.state is TaskState.COMPLETED

        def completed(receiver: Receiver) -> bool:
            states = [
                (r.json.get("statusUpdate") or r.json.get("task") or {})
                .get("status", {})
                .get("state")
                for r in receiver.accepted
            ]
            return "TASK_STATE_COMPLETED" in states

        await hook.wait_for(completed)
        assert {r.path for r in hook.received} == {"/ticks"}
        assert {r.headers.get("x-a2a-notification-token") for r in hook.received} == {"t2"}


@pytest.mark.parametrize("binding", BINDINGS)
def test_the_accord_command(js: JsAgent, binding: str) -> None:
    def accord(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "ACCORD_TOKEN": TOKEN}
        command = [str(ACCORD), *args, "--binding", binding]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)

    sent = accord("send", js.url, "hello", "--json")
    assert sent.returncode == 0, sent.stderr
    task = json.loads(sent.stdout)["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "echo: hello"}]
    streamed = accord("stream", js.url, "tick 2 0.02")
    assert streamed.returncode == 0, streamed.stderr
    assert "chunk 0;" in streamed.stdout and "completed" in streamed.stdout
    got = accord("tasks", "get", js.url, task["id"], "--json")
    assert json.loads(got.stdout)["id"] == task["id"]
    refused = subprocess.run(
        [str(ACCORD), "send", js.url, "hello", "--binding", binding],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "ACCORD_TOKEN"},
        timeout=60,
    )
    assert refused.returncode != 0
    assert "UnauthenticatedError" in refused.stderr


def test_the_harness_delegates_to_the_js_agent_over_every_binding(
    js: JsAgent, tmp_path: Path
) -> None:
    """A harness's roster names the JS agent once per binding (its card reordered to prefer
    each), with a bearer token from the environment; three sub-tasks go there, each followed
    by its stream and, the harness having a push_url, by the SDK's push to the doorbell."""
    with card_server() as cards:
        agents = {f"js-{b.lower().replace('+', '-')}": cards.prefer(js.url, b) for b in BINDINGS}
        calls = [spawn_call(f"part {n}", "tick 3 0.3", agent) for n, agent in enumerate(agents, 1)]
        script = [{"text": "", "tool_calls": calls}, {"text": "The JS agent is on it."}]
        script += [{"text": f"noted {n}"} for n in range(1, 10)]
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        config = a_config(
            tmp_path,
            script,
            agents,
            credentials='{ bearer_env = "JS_TOKEN" }',
            harness=f'push_url = "{url}"\n',
            top="access_log = true\n",
        )
        a = start(tmp_path, f"sqlite:///{tmp_path / 'a.db'}", config, name="a", port=port,
                  env={"JS_TOKEN": TOKEN})  # fmt: skip
        try:
            parent = send(a.url, [{"text": "plan"}, brief()])
            assert said(parent) == "The JS agent is on it."
            children = [f"{parent['id']}.{n}" for n in (1, 2, 3)]
            done = eventually(
                lambda: (t := get(a.url, parent["id"])) and len(told(t)) == 3 and t,
                "the three results",
                timeout_s=60,
            )
            assert sorted(r[2] or "" for r in refs(done)) == ["COMPLETED"] * 3
            for text in told(done):
                assert "ended: COMPLETED." in text
                assert "[artifact ticks]\nchunk 0;chunk 1;chunk 2;" in text
            for child, agent in zip(children, agents, strict=True):
                remote = remote_of(a, child)
                assert remote["agent"] == agent
                assert (remote.get("push") or {}).get("registered")
                assert f"POST /harness/push/{child} 204" in a.log()
        finally:
            a.stop()
