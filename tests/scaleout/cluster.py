"""Several ``accord serve`` processes on one PostgreSQL database, each on its own port."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.processes import ServerProcess, free_port, wait_serving

HERE = Path(__file__).resolve().parent


@dataclass
class Node(ServerProcess):
    name: str
    url: str


def start_node(name: str, store: str, workdir: Path, agent: str, config: str) -> Node:
    port = free_port()
    log_path = workdir / f"{name}.log"
    config_path = workdir / f"{name}.toml"
    config_path.write_text(config)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    command = [
        sys.executable, "-m", "accord", "serve",
        "--port", str(port),
        "--store", store,
        "--agent", agent,
        "--config", str(config_path),
        "--log-level", "warning",
    ]  # fmt: skip
    with log_path.open("wb") as log:  # a file, not a pipe: a full pipe would block the node
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    return Node(process, log_path, name, f"http://127.0.0.1:{port}")


def wait_ready(node: Node, timeout: float) -> None:
    wait_serving(node.url, node.process, node.log, timeout)


def stop_node(node: Node) -> None:
    node.stop()


@contextmanager
def cluster(
    store: str,
    workdir: Path,
    size: int = 3,
    agent: str = "scaleout_agents:agent",
    config: str = "",
    timeout: float = 60.0,
) -> Iterator[list[Node]]:
    """``size`` nodes on ``store`` with the settings file ``config`` (TOML), all ready when
    this yields; stopped after.

    Started one after another, each ready before the next starts.
    """
    with ExitStack() as stack:
        nodes: list[Node] = []
        for index in range(size):
            node = start_node(f"node-{'abcdefgh'[index]}", store, workdir, agent, config)
            stack.callback(stop_node, node)
            nodes.append(node)
            wait_ready(node, timeout)
        yield nodes
