from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from accord_server_proc import AccordServer, accord_serve


@pytest.fixture(scope="session")
def accord_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AccordServer]:
    """``accord serve`` with the scripted test agents, a SQLite store and the extended card."""
    with accord_serve(tmp_path_factory.mktemp("accord-serve")) as server:
        yield server
    # Whatever the tests did, the server logged no failure of its own.
    problems = [
        line for line in server.log().splitlines() if "ERROR" in line or "Traceback" in line
    ]
    assert problems == [], "\n".join(problems[:20])
