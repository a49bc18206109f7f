"""The official JS SDK (``@a2a-js/sdk``) as a peer of the suite: installed with ``npm ci`` from
the committed lock file (tests/js/package-lock.json) into tests/js/node_modules, once, and
again only when the lock file changed; the JS agent (agent.mjs) run as a server process; a
script of this folder run with node.

The install (tests/js/install.py) is shared by every test; the session fixture ``js_sdk``
(tests/conftest.py) makes it before the first test that uses it.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.js.install import HERE
from tests.processes import ServerProcess, free_port, wait_serving


def node(script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``node tests/js/<script> args…``, its output captured (as text)."""
    return subprocess.run(
        ["node", str(HERE / script), *args],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def node_json(script: str, *args: str, timeout: float = 300) -> dict[str, object]:
    """The JSON object a script prints on its last line of output."""
    done = node(script, *args, timeout=timeout)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"node {script} exited {done.returncode}: {done.stderr[-3000:]}")
    result: dict[str, object] = json.loads(lines[-1])
    return result


@dataclass
class JsAgent(ServerProcess):
    url: str
    grpc_port: int
    token: str


@contextmanager
def js_agent(workdir: Path, *, token: str = "", name: str = "js-sdk") -> Iterator[JsAgent]:
    """agent.mjs on free loopback ports (``token``: the bearer token every call needs),
    stopped on exit."""
    port, grpc_port = free_port(), free_port()
    log_path = workdir / f"{name}.log"
    command = ["node", str(HERE / "agent.mjs"), "--port", str(port), "--grpc-port", str(grpc_port)]
    command += ["--name", name] + (["--token", token] if token else [])
    with log_path.open("wb") as log:  # a file, not a pipe: a full pipe would block the server
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, cwd=HERE, env=dict(os.environ)
        )
    agent = JsAgent(process, log_path, f"http://127.0.0.1:{port}", grpc_port, token)
    try:
        wait_serving(agent.url, process, agent.log, 30)
        yield agent
    finally:
        agent.stop()
