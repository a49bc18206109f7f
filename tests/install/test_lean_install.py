"""``pip install accord`` is the platform alone: the server (JSON-RPC, HTTP+JSON), the client,
the CLI and SQLite work without any extra, and a part that needs one says which, in one line."""

from __future__ import annotations

import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
import pytest
from tests.processes import ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
LEAN = [sys.executable, str(Path(__file__).with_name("lean_accord.py"))]

pytestmark = pytest.mark.processes


def lean(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LEAN, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_the_base_dependencies_carry_no_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"]).lower()
    for heavy in ("grpcio", "protobuf", "asyncpg", "openai", "anthropic", "mcp", "textual"):
        assert heavy not in base, heavy
    assert "uvicorn" not in base and "starlette" not in base
    extras = project["optional-dependencies"]
    assert {"grpc", "postgres", "harness", "chat", "otel", "all"} <= set(extras)


def test_a_lean_install_serves_and_sends_on_sqlite(tmp_path: Path) -> None:
    port = free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        server = ServerProcess(
            subprocess.Popen(
                [*LEAN, "serve", "--port", str(port), "--store", "sqlite:///lean.db"],
                cwd=tmp_path,
                stdout=log,
                stderr=subprocess.STDOUT,
            ),
            log_path,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                card = httpx.get(f"http://127.0.0.1:{port}/.well-known/agent-card.json")
                break
            except httpx.TransportError:
                assert server.process.poll() is None, server.log()
                assert time.monotonic() < deadline, server.log()
                time.sleep(0.1)
        assert card.status_code == 200
        sent = lean("send", f":{port}", "hello lean", cwd=tmp_path)
        assert sent.returncode == 0, sent.stderr
        assert "completed" in sent.stdout and "hello lean" in sent.stdout
    finally:
        server.stop()
    assert (tmp_path / "lean.db").is_file()


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["serve", "--agent", "harness", "--store", "memory://", "--port", "0"],
            "the harness (--agent harness) needs accord[harness]: pip install 'accord[harness]'",
        ),
        (
            ["serve", "--store", "memory://", "--port", "0", "--grpc-port", "1"],
            "gRPC (grpc_port) needs accord[grpc]: pip install 'accord[grpc]'",
        ),
        (
            ["serve", "--store", "postgresql://nobody@127.0.0.1:1/none", "--port", "0"],
            "a PostgreSQL store needs accord[postgres]: pip install 'accord[postgres]'",
        ),
        (
            ["serve", "--store", "memory://", "--port", "0", "--http", "uvicorn"],
            "http = \"uvicorn\" needs accord[uvicorn]: pip install 'accord[uvicorn]'",
        ),
        (["chat", ":9"], "accord chat needs accord[chat]: pip install 'accord[chat]'"),
    ],
)
def test_a_missing_extra_is_named_in_one_line(args: list[str], line: str, tmp_path: Path) -> None:
    done = lean(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"accord: {line}"]
