"""schemathesis against a running ``accord serve``: generated requests for every command and
view of ``/openapi.json`` never get a 500, and every response matches the document (status
code, content type, body schema). Bounded: a dozen examples per operation."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from procs import ACCORD
from schemathesis.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from tests.processes import free_port

pytestmark = pytest.mark.processes


@schemathesis.check
def no_internal_error(
    ctx: object, response: schemathesis.Response, case: schemathesis.Case
) -> None:
    """500 means accord failed; 501 and 502 are outcomes the contract declares."""
    assert response.status_code != 500, response.text


CHECKS = [
    no_internal_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


CLIENT_ONLY = """
[[principals]]
identity = "client"
actors = ["a2a.tasks.Client", "a2a.discovery.Client"]
api_key = "client-key-0123456789abcdef"
"""


@pytest.fixture(scope="module", params=["open", "client-key"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, dict[str, str]]]:
    """Open (every actor granted), or a client-only key (agent commands and views: 403)."""
    port = free_port()
    directory = tmp_path_factory.mktemp("schemathesis")
    command = [str(ACCORD), "serve", "--port", str(port), "--store", "memory://"]
    headers = {"A2A-Version": "1.0"}
    if request.param == "client-key":
        (directory / "accord.toml").write_text(CLIENT_ONLY)
        command += ["--config", str(directory / "accord.toml")]
        headers["X-API-Key"] = "client-key-0123456789abcdef"
    log_path: Path = directory / "serve.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    httpx.get(f"{url}/openapi.json", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            yield url, headers
        finally:
            process.terminate()
            process.wait(10)
    assert "Traceback" not in log_path.read_text(errors="replace")


def test_every_response_matches_the_contract(served: tuple[str, dict[str, str]]) -> None:
    """Each operation in turn (schemathesis' own pytest plugin predates pytest 9)."""
    url, headers = served
    api = schemathesis.openapi.from_url(f"{url}/openapi.json")
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) == 21

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=12,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(base_url=url, headers=headers, checks=CHECKS)

        check()
