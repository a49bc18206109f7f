"""The traversal: one nested instruction routed through a chain of agents written on three
A2A implementations — accord, an agent on the official Python SDK, an agent on the official JS
SDK, and accord again — each hop resolving the next agent's card and calling it over the
transport the scenario names, in the scenario's mode (send, stream, push, resubscribe then
cancel); the trace the chain hands back is checked at the end. traversal_hops.py says what an
instruction and a trace are; one scenario per transport and mode.

The three servers start once for the module; the accord one serves both ends of the chain."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from accord_server_proc import accord_serve
from tests.js.peer import js_agent
from tests.processes import ServerProcess, free_port, wait_serving
from tests.push.receiver import Receiver
from traversal_hops import Trace, call_with_accord

pytestmark = pytest.mark.processes

HERE = Path(__file__).resolve().parent
TRANSPORTS = ("JSONRPC", "HTTP+JSON", "GRPC")
MODES = ("send", "stream", "push", "resubscribe")
# accord's push to the test's webhook on loopback (its SSRF guard refuses that by default).
SETTINGS = 'push_allow_hosts = ["127.0.0.1/32"]\n'


@dataclass(frozen=True)
class Chain:
    accord: str
    python: str
    js: str

    def hops(self) -> list[tuple[str, str]]:
        """(name, card) of each hop after the first, in order."""
        return [("python-sdk", self.python), ("js-sdk", self.js), ("accord", self.accord)]


@pytest.fixture(scope="module")
def chain(js_sdk: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    workdir = tmp_path_factory.mktemp("traversal")
    grpc = ("--grpc-port", str(free_port()))
    with (
        accord_serve(workdir, "traversal_hops:agent", args=grpc, settings=SETTINGS) as accord,
        js_agent(workdir, name="js-sdk") as js,
        python_sdk_agent(workdir) as python,
    ):
        yield Chain(accord.url, python, js.url)
    problems = [line for line in accord.log().splitlines() if "ERROR" in line]
    assert problems == [], "\n".join(problems[:20])


@contextmanager
def python_sdk_agent(workdir: Path) -> Iterator[str]:
    """traversal_sdk_agent.py (the official Python SDK's hop) on free ports; its URL."""
    port, grpc_port = free_port(), free_port()
    log_path = workdir / "python-sdk.log"
    command = [sys.executable, str(HERE / "traversal_sdk_agent.py"), "--port", str(port),
               "--grpc-port", str(grpc_port)]  # fmt: skip
    with log_path.open("wb") as log:  # a file, not a pipe: a full pipe would block the server
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    server = ServerProcess(process, log_path)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(url, process, server.log, 30)
        yield url
    finally:
        server.stop()


def instruction(chain: Chain, transport: str, mode: str, webhook: str) -> dict[str, Any]:
    """The nested instruction for the chain's first agent: each hop calls the next in ``mode``
    over ``transport``; in mode push each registers ``webhook`` (its token names the edge),
    in mode resubscribe each callee holds its task until its caller cancels it."""
    names = ["accord", *(name for name, _ in chain.hops())]
    hold = mode == "resubscribe"
    nested: dict[str, Any] = {"hold": hold}
    for caller, (name, card) in reversed(list(zip(names, chain.hops(), strict=False))):
        call = {"card": card, "transport": transport, "mode": mode, "then": nested}
        if mode == "push":
            call["push"] = {"url": webhook, "token": f"{caller}>{name}"}
        nested = {"hold": hold, "call": call}
    return nested


def expected(transport: str, mode: str) -> Trace:
    ended = "TASK_STATE_CANCELED" if mode == "resubscribe" else "TASK_STATE_COMPLETED"
    record = {"transport": transport, "mode": mode, "callee": ended}
    return [
        {"agent": "accord", **record},
        {"agent": "python-sdk", **record},
        {"agent": "js-sdk", **record},
        {"agent": "accord"},
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_traversal(chain: Chain, transport: str, mode: str) -> None:
    async with Receiver() as hook:
        first = {
            "card": chain.accord,
            "transport": transport,
            "mode": mode,
            "push": {"url": hook.url(), "token": "runner>accord"},
            "then": instruction(chain, transport, mode, hook.url()),
        }
        trace, state = await call_with_accord(first)
        assert trace == expected(transport, mode), trace
        assert state == ("TASK_STATE_CANCELED" if mode == "resubscribe" else "TASK_STATE_COMPLETED")
        if mode == "push":
            # Every server of the chain pushed its task's events to the webhook registered by
            # its caller, the last of them its completion with the trace from there on.
            edges = ["runner>accord", "accord>python-sdk", "python-sdk>js-sdk", "js-sdk>accord"]
            await hook.wait_for(lambda r: all(completed(r, edge) for edge in edges))
            for n, edge in enumerate(edges):
                assert pushed_trace(hook, edge) == expected(transport, mode)[n:]


def _pushed(receiver: Receiver, token: str) -> list[dict[str, Any]]:
    return [r.json for r in receiver.accepted if r.headers.get("x-a2a-notification-token") == token]


def completed(receiver: Receiver, token: str) -> bool:
    for event in _pushed(receiver, token):
        status = (event.get("statusUpdate") or event.get("task") or {}).get("status", {})
        if status.get("state") == "TASK_STATE_COMPLETED":
            return True
    return False


def pushed_trace(receiver: Receiver, token: str) -> Trace | None:
    for event in _pushed(receiver, token):
        artifacts = [event["artifactUpdate"]["artifact"]] if "artifactUpdate" in event else []
        artifacts += (event.get("task") or {}).get("artifacts", [])
        for artifact in artifacts:
            if artifact.get("artifactId") == "trace":
                found: Trace = json.loads(artifact["parts"][0]["text"])
                return found
    return None
