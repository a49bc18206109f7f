from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accord_server import AccordServer, accord_serve

from sdk_servers.fixtures import RunningServer, sdk_echo_server


@pytest.fixture(scope="session")
def sdk_server() -> Iterator[RunningServer]:
    """The a2a-sdk echo agent, in a subprocess on free loopback ports, for the whole session."""
    with sdk_echo_server() as server:
        yield server


@pytest.fixture(scope="session")
def accord_server() -> Iterator[AccordServer]:
    """``accord serve`` with the test agents (accord_agents.py), reached through a cutting proxy."""
    with accord_serve() as server:
        yield server
