"""Remote hook executors against a hook server over real HTTP: the JSON-RPC request as
tiny-harness's remote hooks read it, and every reply form (replace, pass, abort); a timeout,
a reply that is not JSON, a JSON-RPC error, an unknown abort reason, a context that does
not fit, an HTTP error and a refused connection all fail closed, naming the hook. The URL
passes the SSRF guard push webhooks pass."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.harness.engine_kit import ALICE, Recorder, extension, running, said, send
from tests.harness.hook_server import HookServer, hook_server

from accord.harness import HarnessAgent
from accord.harness._wire import Role
from accord.harness.hooks import HookAbort, HookFailure, MessageReceived
from accord.harness.hooks._remote import RemoteExecutor
from accord.harness.plugins import Loading, load_directory
from accord.push._ssrf import AddressPolicy, Guard
from accord.wire._model import TaskState

LOOPBACK = Guard(AddressPolicy(["127.0.0.1"], subject="remote hooks", setting="hook_allow_hosts"))
CONTEXT = MessageReceived(
    task_id="t1",
    correlation_id="m1",
    sender="alice",
    sender_role=Role.REPORTER,
    message={"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi there"}]},
)


@pytest.fixture(scope="module")
def hooks() -> Iterator[HookServer]:
    with hook_server() as server:
        yield server


def remote(url: str, guard: Guard = LOOPBACK, timeout_s: float = 5.0) -> RemoteExecutor:
    return RemoteExecutor("policy", url, guard=guard, priority=500, timeout_s=timeout_s)


async def test_the_request_is_json_rpc_with_the_point_and_the_context(hooks: HookServer) -> None:
    executor = remote(hooks.at("pass"))
    assert await executor.handle("message.received.pre", CONTEXT) is None
    assert await executor.handle("message.received.post", CONTEXT) is None
    first, second = hooks.requests[-2:]
    assert first == {
        "path": "/pass",
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message.received.pre",
        "params": {
            "context": {
                "task_id": "t1",
                "correlation_id": "m1",
                "attempt": 1,
                "sender": "alice",
                "sender_role": "reporter",
                "message": {"messageId": "m1", "role": "ROLE_USER",
                            "parts": [{"text": "hi there"}]},
            }
        },
    }  # fmt: skip
    assert second["id"] == 2 and second["method"] == "message.received.post"


async def test_a_reply_replaces_the_context_or_aborts(hooks: HookServer) -> None:
    replaced = await remote(hooks.at("replace")).handle("message.received.pre", CONTEXT)
    assert isinstance(replaced, MessageReceived)
    assert replaced.message["parts"] == [{"text": "HI THERE"}]
    assert replaced.sender == "alice"
    with pytest.raises(HookAbort) as aborted:
        await remote(hooks.at("abort")).handle("message.received.pre", CONTEXT)
    assert not isinstance(aborted.value, HookFailure)
    assert (aborted.value.reason, aborted.value.message) == ("policy", "closed for the day")


@pytest.mark.parametrize(
    ("path", "detail"),
    [
        ("garbage", "answered with something other than JSON"),
        ("error", "answered with JSON-RPC error -32000"),
        ("wrong-id", "answered with something other than its JSON-RPC reply"),
        ("abort-odd", "aborted with an unknown reason 'because'"),
        ("bad-context", "answered with a context that does not fit"),
        ("http500", "answered HTTP 500"),
        ("nowhere", "answered HTTP 404"),
    ],
)
async def test_a_reply_out_of_protocol_fails_closed_naming_the_hook(
    hooks: HookServer, path: str, detail: str
) -> None:
    with pytest.raises(HookFailure) as failed:
        await remote(hooks.at(path)).handle("message.received.pre", CONTEXT)
    assert failed.value.reason == "refused"
    assert failed.value.message.startswith(f"hook 'policy' failed: {detail}")


async def test_a_timeout_and_a_refused_connection_fail_closed(hooks: HookServer) -> None:
    with pytest.raises(HookFailure) as slow:
        await remote(hooks.at("slow"), timeout_s=0.2).handle("message.received.pre", CONTEXT)
    assert slow.value.message == "hook 'policy' failed: no answer within 0.2 s"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: the connection is refused
        with pytest.raises(HookFailure) as refused:
            await remote(f"http://127.0.0.1:{port}/").handle("message.received.pre", CONTEXT)
    assert refused.value.message == "hook 'policy' failed: unreachable"


async def test_the_ssrf_guard_refuses_what_it_refuses_webhooks(hooks: HookServer) -> None:
    unguarded = Guard(AddressPolicy(subject="remote hooks", setting="hook_allow_hosts"))
    before = len(hooks.requests)
    for url in (hooks.at("pass"), "http://169.254.169.254/latest", "ftp://example.com/"):
        with pytest.raises(HookFailure) as refused:
            await remote(url, unguarded).handle("message.received.pre", CONTEXT)
        assert refused.value.message == "hook 'policy' failed: its URL is refused by the SSRF guard"
    assert len(hooks.requests) == before  # nothing was sent


def plugin(root: Path, hooks: list[dict[str, object]], commands: list[dict[str, object]]) -> Path:
    namespace = root / "io.github.madarauchiha-314.tiny-harness"
    namespace.mkdir(parents=True)
    (root / "plugin.json").write_text(json.dumps({
        "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "remote-policy",
    }))  # fmt: skip
    (namespace / "hooks.json").write_text(json.dumps({"hooks": hooks}))
    (namespace / "commands.json").write_text(json.dumps({"commands": commands}))
    return root


async def test_remote_hooks_of_a_plugin_run_on_the_harness(
    hooks: HookServer, tmp_path: Path
) -> None:
    root = plugin(
        tmp_path / "remote-policy",
        [
            {"name": "shout", "points": ["message.received.pre"], "url": hooks.at("replace")},
            {"name": "gate", "points": ["turn.started.pre"], "url": hooks.at("slow"),
             "timeout_s": 0.2},
            {"name": "ask", "points": ["command.invoked.in"], "url": hooks.at("replace")},
            {"name": "far", "points": ["message.received.post"],
             "url": "http://10.1.2.3/never"},
        ],
        [{"name": "ask", "description": "Ask the remote", "hook": "ask", "changes": "always"}],
    )  # fmt: skip
    model = Recorder()
    report = []

    def setup(agent: HarnessAgent) -> None:
        loading = Loading(LOOPBACK, 5.0)
        report.append(load_directory(agent, root, loading))

    async with running(model=model, setup=setup) as (engine, _):
        [loaded] = report
        assert loaded.loaded == ["/ask", "hook shout", "hook gate"]
        assert [(s.kind, s.id) for s in loaded.skipped] == [("hook", "far")]
        assert "10.1.2.3, a private address" in loaded.skipped[0].reason
        before = len(hooks.requests)
        # The turn.started hook times out: the turn is refused, closed, naming it.
        task = await send(engine, ALICE, "hello")
        assert said(task) == "turn refused: hook 'gate' failed: no answer within 0.2 s"
        assert task.status.state is TaskState.INPUT_REQUIRED
        assert model.seen == []
        # The remote command body answers, and asks for a change the harness makes.
        asked = await send(engine, ALICE, "/ask what now", task.id)
        assert said(asked) == "remote says what now"
        assert extension(asked)["model"] == "other"
        assert [(r["path"], r["method"]) for r in hooks.requests[before:]] == [
            ("/replace", "message.received.pre"),
            ("/slow", "turn.started.pre"),
            ("/replace", "message.received.pre"),  # (a command's message is judged too)
            ("/replace", "command.invoked.in"),
        ]
