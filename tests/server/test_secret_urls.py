"""A store URL may carry a database password: it never reaches a log line or an error."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from accord.store import open_store, redact_url

SECRET = "SeCrEt-4711"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql://accord:{SECRET}@db:5432/accord", "postgresql://accord:***@db:5432/accord"),
        (
            f"postgres://u:{SECRET}@h/d?sslmode=require&password={SECRET}&x=1",
            "postgres://u:***@h/d?sslmode=require&password=***&x=1",
        ),
        (f"postgresql://h/d?sslpassword={SECRET}", "postgresql://h/d?sslpassword=***"),
        ("postgresql://accord@db/accord", "postgresql://accord@db/accord"),
        ("sqlite:///accord.db?synchronous=normal", "sqlite:///accord.db?synchronous=normal"),
    ],
)
def test_redact_url_hides_passwords_only(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://accord:{SECRET}@db/accord?pool_size=zero",
        f"nosuch://accord:{SECRET}@db/accord",
    ],
)
def test_store_url_errors_hide_the_password(url: str) -> None:
    with pytest.raises(ValueError) as caught:
        open_store(url)
    assert SECRET not in str(caught.value) and "accord:***@" in str(caught.value)


@pytest.mark.processes
def test_serve_logs_the_store_without_its_password() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on port 1: the server logs its store, then fails to start.
    store = f"postgresql://accord:{SECRET}@127.0.0.1:1/accord"
    done = subprocess.run(
        [sys.executable, "-m", "accord", "serve", "--port", str(port), "--store", store],
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "postgresql://accord:***@127.0.0.1:1/accord" in output
    assert SECRET not in output
