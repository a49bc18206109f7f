"""``/healthz`` and ``/readyz``: unauthenticated, and ``/readyz`` says 503 and which part
failed when the store or the bus cannot be reached, without revealing anything else."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
from server_helpers import Serve, rpc, serve_app
from tests.conftest import ADMIN_DSN, _execute, _with_database
from tests.waiting import until

from accord.app._build import build_app
from accord.app._settings import Principal, Settings

SECRET = "health-test-token-0123456789"
AUTH = {"bearer_tokens": {SECRET: Principal("alice")}}


async def test_healthz_and_readyz_answer_without_credentials(serve: Serve) -> None:
    async with serve(**AUTH) as http:
        refused = await rpc(http, "ListTasks", {})
        assert refused["error"]["message"] == "missing or invalid credentials"
        for path in ("/healthz", "/readyz"):
            answer = await http.get(path)
            assert answer.status_code == 200, path
            assert answer.json() == {"status": "ok"}
            assert answer.headers["cache-control"] == "no-store"
        assert (await http.head("/readyz")).status_code == 200
        assert (await http.post("/readyz")).status_code == 404  # probes only read


async def _wait_for_readiness(http: httpx.AsyncClient, failed: set[str]) -> httpx.Response:
    """The first /readyz answer whose failed parts are ``failed`` (the server notices a lost
    database on its next round trip, and a recovered one on its next reconnection)."""

    async def answer() -> httpx.Response | None:
        got = await http.get("/readyz")
        return got if set(got.json().get("failed", [])) == failed else None

    return await until(answer, f"/readyz to name {sorted(failed)}", timeout_s=60, every_s=0.3)


async def test_readyz_names_a_store_that_cannot_serve(tmp_path: Path) -> None:
    app = build_app(Settings(store=f"sqlite:///{tmp_path / 'private-name.db'}"))
    async with serve_app(app) as http:
        assert (await http.get("/readyz")).status_code == 200
        await app.service.engine.store.close()  # as if its writer had died
        answer = await _wait_for_readiness(http, {"store"})
        assert answer.status_code == 503
        assert answer.json() == {"status": "unavailable", "failed": ["store"]}
        assert "private-name" not in answer.text
        assert (await http.get("/healthz")).status_code == 200  # alive all the same


@pytest.mark.postgres
async def test_readyz_follows_the_postgresql_database_down_and_back() -> None:
    name = f"accord_ready_{uuid.uuid4().hex[:12]}"
    await _execute(ADMIN_DSN, f'CREATE DATABASE "{name}"')
    try:
        settings = Settings(store=_with_database(ADMIN_DSN, name))
        async with serve_app(build_app(settings)) as http:
            await _wait_for_readiness(http, set())
            await _execute(ADMIN_DSN, f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            await _execute(
                ADMIN_DSN,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE datname = '{name}' AND pid <> pg_backend_pid()",
            )
            down = await _wait_for_readiness(http, {"store", "bus"})
            assert down.status_code == 503
            assert name not in down.text and "127.0.0.1" not in down.text
            await _execute(ADMIN_DSN, f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            back = await _wait_for_readiness(http, set())
            assert back.status_code == 200
    finally:
        await _execute(ADMIN_DSN, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
