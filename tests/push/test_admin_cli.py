"""``accord admin push-deliveries``: an operator lists failing (or active, done) webhooks from
the server's store, SQLite or PostgreSQL, and never sees a token or a credential."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.store.records import new_task

from accord.cli._main import main
from accord.core._records import PushConfigRecord
from accord.store import SqliteStore, TaskStore
from accord.store._postgres import PostgresStore
from accord.wire._model import (
    AuthenticationInfo,
    TaskPushNotificationConfig,
)

TOKEN = "tok-7f3a9c0d2b"
CREDENTIALS = "cred-91be44e6aa"
PATH_SECRET = "pathsecret-5d21c8"
RETRY_AT_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _config(task_id: str, config_id: str, tenant: str, host: str) -> PushConfigRecord:
    config = TaskPushNotificationConfig(
        url=f"https://{host}/services/T0/{PATH_SECRET}?key={PATH_SECRET}",
        id=config_id,
        task_id=task_id,
        tenant=tenant,
        token=TOKEN,
        authentication=AuthenticationInfo(scheme="Bearer", credentials=CREDENTIALS),
    )
    return PushConfigRecord(config=config, tenant=tenant, created_ms=5)


async def _seed(store: TaskStore) -> None:
    """Two failing webhooks (two tenants), one active, one done."""
    await store.open()
    try:
        for task_id, tenant in (("task-a", "acme"), ("task-b", "globex")):
            await new_task(store, task_id, tenant=tenant)
        deliveries = (
            ("task-a", "hook-1", "acme", "hooks.acme.example", "failing", 8),
            ("task-b", "hook-2", "globex", "hooks.globex.example:8443", "failing", 3),
            ("task-a", "hook-3", "acme", "ok.acme.example", "active", 1),
            ("task-b", "hook-4", "globex", "done.globex.example", "done", 0),
        )
        for task_id, config_id, tenant, host, state, failures in deliveries:
            await store.put_push_config(_config(task_id, config_id, tenant, host), 0)
            assert await store.update_push_delivery(
                task_id,
                config_id,
                cursor=1,
                state=state,  # type: ignore[arg-type]
                failures=failures,
                last_error=f"{host} answered HTTP 503" if failures else "",
                next_attempt_ms=RETRY_AT_MS if state == "active" else 0,
            )
    finally:
        await store.close()


def _admin(*args: str, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(main, ["admin", "push-deliveries", *args], env=env)
    for secret in (TOKEN, CREDENTIALS, PATH_SECRET):
        assert secret not in result.output  # stdout and stderr together
    return result


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    path = tmp_path / "accord.db"
    asyncio.run(_seed(SqliteStore(str(path))))
    return f"sqlite:///{path}"


def test_failing_webhooks_as_a_table(sqlite_url: str) -> None:
    result = _admin("--store", sqlite_url)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = next(line for line in lines if "last error" in line)
    assert all(word in header for word in ("task", "config", "tenant", "webhook", "failures"))
    assert "next attempt" in header
    rows = [line for line in lines if "task-" in line]
    assert len(rows) == 2
    assert all(word in rows[0] for word in ("task-a", "hook-1", "acme", "8"))
    assert "https://hooks.acme.example:443" in rows[0]
    assert "hooks.acme.example answered HTTP 503" in rows[0]
    assert all(word in rows[1] for word in ("task-b", "hook-2", "globex", "3"))
    assert "https://hooks.globex.example:8443" in rows[1]
    assert "hook-3" not in result.stdout and "hook-4" not in result.stdout


def test_json_output_and_the_other_states(sqlite_url: str) -> None:
    result = _admin("--store", sqlite_url, "--json")
    assert result.exit_code == 0, result.output
    failing = json.loads(result.stdout)
    assert failing[0] == {
        "taskId": "task-a",
        "configId": "hook-1",
        "tenant": "acme",
        "webhook": "https://hooks.acme.example:443",
        "state": "failing",
        "failures": 8,
        "lastError": "hooks.acme.example answered HTTP 503",
        "nextAttemptMs": 0,
        "nextAttempt": "",
        "deliveredSeq": 1,
        "taskSeq": 1,
    }
    assert [row["configId"] for row in failing] == ["hook-1", "hook-2"]

    active = json.loads(_admin("--store", sqlite_url, "--json", "--state", "active").stdout)
    assert [(row["configId"], row["failures"]) for row in active] == [("hook-3", 1)]
    assert active[0]["nextAttempt"] == "2026-01-01T00:00:00+00:00"
    assert active[0]["nextAttemptMs"] == RETRY_AT_MS
    done = json.loads(_admin("--store", sqlite_url, "--json", "--state", "done").stdout)
    assert [row["configId"] for row in done] == ["hook-4"]
    table = _admin("--store", sqlite_url, "--state", "active")
    assert "2026-01-01T00:00:00+00:00" in table.stdout


def test_limit_says_when_there_is_more(sqlite_url: str) -> None:
    result = _admin("--store", sqlite_url, "--json", "--limit", "1")
    assert result.exit_code == 0
    assert [row["configId"] for row in json.loads(result.stdout)] == ["hook-1"]
    assert "more failing deliveries than --limit 1" in result.stderr
    assert _admin("--store", sqlite_url, "--limit", "2").stderr == ""


def test_the_store_comes_from_the_settings_like_serve(sqlite_url: str, tmp_path: Path) -> None:
    from_env = _admin("--json", env={"ACCORD_STORE": sqlite_url, "ACCORD_CONFIG": ""})
    assert [row["configId"] for row in json.loads(from_env.stdout)] == ["hook-1", "hook-2"]
    config = tmp_path / "accord.toml"
    config.write_text(f'store = "{sqlite_url}"\n')
    from_file = _admin("--json", "--config", str(config))
    assert [row["configId"] for row in json.loads(from_file.stdout)] == ["hook-1", "hook-2"]


def test_nothing_to_list_and_bad_stores(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    asyncio.run(_seed_nothing(SqliteStore(str(empty))))
    result = _admin("--store", f"sqlite:///{empty}")
    assert (result.exit_code, result.stdout.strip()) == (0, "no failing push deliveries")
    assert json.loads(_admin("--store", f"sqlite:///{empty}", "--json").stdout) == []

    missing = tmp_path / "typo.db"
    result = _admin("--store", f"sqlite:///{missing}")
    assert result.exit_code == 2 and "no SQLite database" in result.stderr
    assert not missing.exists()  # not created by looking
    assert _admin("--store", "memory://").exit_code == 2
    assert _admin("--store", "nope://x").exit_code == 2
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database" * 100)
    result = _admin("--store", f"sqlite:///{garbage}")
    assert result.exit_code == 3 and "cannot read the store" in result.stderr


async def _seed_nothing(store: TaskStore) -> None:
    await store.open()
    await store.close()


def test_postgres_store(pg_url: str) -> None:
    asyncio.run(_seed(PostgresStore(pg_url)))
    result = _admin("--store", pg_url, "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["configId"], r["tenant"], r["failures"]) for r in rows] == [
        ("hook-1", "acme", 8),
        ("hook-2", "globex", 3),
    ]
    table = _admin("--store", pg_url)
    assert "https://hooks.globex.example:8443" in table.stdout
