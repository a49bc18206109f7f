"""Retention (docs/server.md, "Retention"): ended tasks older than ``retention_days`` are
swept in the background with their logs, push configs and every store extension's rows (a
feature's media, the harness's tables), live tasks untouched; ``POST
/admin/tasks/{id}:purge`` and ``accord admin purge`` delete one ended task now, for the
admin actor only, in its own tenant."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

import httpx
import pytest
from parking_agent import agent as parking
from serve_process import serving
from server_helpers import message, serve_app
from tests.waiting import until

from accord.app._build import build_app
from accord.app._settings import Settings
from accord.store import StoreExtension, TaskRows

OPERATOR_KEY = "operator-key-0123456789"
CLIENT_KEY = "client-key-0123456789ab"
OTHER_KEY = "other-tenant-operator-01"
PRINCIPALS = [
    {
        "identity": "ops",
        "tenant": "acme",
        "actors": ["a2a.tasks.Client", "accord.admin.Operator"],
        "api_key": OPERATOR_KEY,
    },
    {"identity": "alice", "tenant": "acme", "actors": ["a2a.tasks.Client"], "api_key": CLIENT_KEY},
    {
        "identity": "ops-b",
        "tenant": "beta",
        "actors": ["a2a.tasks.Client", "accord.admin.Operator"],
        "api_key": OTHER_KEY,
    },
]


class Media:
    def __init__(self) -> None:
        self.rows: dict[str, bytes] = {}

    def forget_tasks(self, task_ids: Collection[str]) -> None:
        for task_id in task_ids:
            self.rows.pop(task_id, None)


# A feature's table whose rows go with their task (as media's and the harness's do).
MEDIA = StoreExtension(
    name="test_media",
    memory=Media,
    sqlite=[(1, ("CREATE TABLE test_media (task_id TEXT NOT NULL, body BLOB NOT NULL)",))],
    task_rows=(TaskRows("test_media"),),
)


def _media_of(db: Path, task_id: str) -> int:
    with sqlite3.connect(db) as conn:
        sql = "SELECT COUNT(*) FROM test_media WHERE task_id = ?"
        return int(conn.execute(sql, (task_id,)).fetchone()[0])


async def _send(http: httpx.AsyncClient, text: str, key: str | None = None) -> dict[str, Any]:
    headers = {"X-API-Key": key} if key else {}
    response = await http.post("/message:send", json={"message": message(text)}, headers=headers)
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()["task"]
    return task


async def test_the_sweep_deletes_ended_tasks_with_their_rows_and_spares_live_ones(
    tmp_path: Path,
) -> None:
    db = tmp_path / "accord.db"
    settings = Settings(
        store=f"sqlite:///{db}", retention_days=0.5 / 86_400, retention_sweep_s=0.05
    )
    app = build_app(settings, parking)
    access = app.service.engine.store.extend(MEDIA)
    async with serve_app(app) as http:
        ended = await _send(http, "done")
        live = await _send(http, "ask")
        assert live["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        config = {"url": "https://example.com/hook", "taskId": ended["id"]}
        configured = await http.post(f"/tasks/{ended['id']}/pushNotificationConfigs", json=config)
        assert configured.status_code == 200, configured.text
        assert access.dialect == "sqlite"
        for task in (ended, live):
            await access.write(
                lambda conn, task_id=task["id"]: conn.execute(
                    "INSERT INTO test_media VALUES (?, ?)", (task_id, b"bytes")
                )
            )

        async def gone() -> bool:
            return (await http.get(f"/tasks/{ended['id']}")).status_code == 404

        await until(gone, "the ended task swept")
        assert _media_of(db, ended["id"]) == 0
        with sqlite3.connect(db) as conn:
            for table in ("events", "push_configs", "feed"):
                found = conn.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE task_id = ?", (ended["id"],)
                ).fetchone()[0]
                assert found == 0, table
        # The live task stays, whatever its age, with its rows.
        still = await http.get(f"/tasks/{live['id']}")
        assert still.status_code == 200
        assert still.json()["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert _media_of(db, live["id"]) == 1
        assert app.service.engine.stats.retained_deleted == 1


def test_retention_settings_are_checked() -> None:
    from accord.app import load
    from accord.config import ConfigError

    with pytest.raises(ConfigError, match="retention-sweep-s"):
        load(None, {"retention_sweep_s": "0"})
    with pytest.raises(ConfigError, match="retention-days"):
        load(None, {"retention_days": "-1"})
    assert load(None, {"retention_days": "30"}).retention_days == 30


async def test_purge_deletes_an_ended_task_now_for_the_admin_of_its_tenant(
    tmp_path: Path,
) -> None:
    db = tmp_path / "accord.db"
    settings = Settings(store=f"sqlite:///{db}", principals=PRINCIPALS)
    app = build_app(settings, parking)
    access = app.service.engine.store.extend(MEDIA)
    async with serve_app(app) as http:
        ended = await _send(http, "done", CLIENT_KEY)
        live = await _send(http, "ask", CLIENT_KEY)
        assert access.dialect == "sqlite"
        await access.write(
            lambda conn: conn.execute("INSERT INTO test_media VALUES (?, ?)", (ended["id"], b"x"))
        )

        def purge(task_id: str, key: str) -> Any:
            return http.post(f"/admin/tasks/{task_id}:purge", headers={"X-API-Key": key})

        # A client without the admin actor is refused before anything is read.
        refused = await purge(ended["id"], CLIENT_KEY)
        assert refused.status_code == 403
        assert refused.json()["error"]["status"] == "PERMISSION_DENIED"
        # Another tenant's admin: the answer an unknown id gets, word for word but the id.
        foreign = await purge(ended["id"], OTHER_KEY)
        unknown = await purge("no-such-task", OTHER_KEY)
        assert foreign.status_code == unknown.status_code == 404
        assert foreign.json()["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
        assert foreign.text.replace(ended["id"], "X") == unknown.text.replace("no-such-task", "X")
        # A live task is refused: cancel it first.
        conflict = await purge(live["id"], OPERATOR_KEY)
        assert conflict.status_code == 409, conflict.text
        assert "cancel it" in conflict.json()["error"]["message"]
        # No credentials at all.
        assert (await http.post(f"/admin/tasks/{ended['id']}:purge")).status_code == 401

        done = await purge(ended["id"], OPERATOR_KEY)
        assert done.status_code == 200, done.text
        assert done.json() == {"purged": ended["id"]}
        headers = {"X-API-Key": CLIENT_KEY}
        assert (await http.get(f"/tasks/{ended['id']}", headers=headers)).status_code == 404
        assert _media_of(db, ended["id"]) == 0
        assert (await purge(ended["id"], OPERATOR_KEY)).status_code == 404  # once
        assert (await http.get(f"/tasks/{live['id']}", headers=headers)).status_code == 200
        # Only POST.
        assert (await http.get(f"/admin/tasks/{live['id']}:purge")).status_code == 404


async def test_purge_on_a_memory_store_in_open_mode() -> None:
    app = build_app(dataclasses.replace(Settings(store="memory://")), parking)
    async with serve_app(app) as http:
        ended = await _send(http, "done")
        assert (await http.post(f"/admin/tasks/{ended['id']}:purge")).status_code == 200
        assert (await http.get(f"/tasks/{ended['id']}")).status_code == 404


def _config(path: Path) -> Path:
    lines = []
    for principal in PRINCIPALS:
        lines.append("[[principals]]")
        for key, value in principal.items():
            if isinstance(value, list):
                shown = "[" + ", ".join(f'"{v}"' for v in value) + "]"
            else:
                shown = f'"{value}"'
            lines.append(f"{key} = {shown}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _accord(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "accord", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.processes
def test_accord_admin_purge(tmp_path: Path) -> None:
    shutil.copy(Path(__file__).with_name("parking_agent.py"), tmp_path)
    config = _config(tmp_path / "accord.toml")
    store = f"sqlite:///{tmp_path / 'accord.db'}"
    args = ("--agent", "parking_agent:agent", "--config", str(config), "--store", store)
    with (
        serving(*args, cwd=tmp_path) as served,
        httpx.Client(base_url=served.url, headers={"A2A-Version": "1.0"}) as http,
    ):

        def send(text: str) -> str:
            answer = http.post(
                "/message:send",
                json={"message": message(text)},
                headers={"X-API-Key": CLIENT_KEY},
            )
            assert answer.status_code == 200, answer.text
            return str(answer.json()["task"]["id"])

        ended, live = send("done"), send("ask")
        operator = ("--header", f"X-API-Key:{OPERATOR_KEY}")

        purged = _accord("admin", "purge", served.url, ended, *operator)
        assert purged.returncode == 0, purged.stderr
        assert purged.stdout.strip() == f"purged {ended}"
        again = _accord("admin", "purge", served.url, ended, *operator, "--json")
        assert again.returncode == 1
        assert '"TASK_NOT_FOUND"' in again.stdout
        refused = _accord("admin", "purge", served.url, live, *operator)
        assert refused.returncode == 1
        assert "cancel it" in refused.stderr
        as_client = ("--header", f"X-API-Key:{CLIENT_KEY}")
        client = _accord("admin", "purge", served.url, live, *as_client)
        assert client.returncode == 1
        assert "accord.admin.Operator" in client.stderr
        gone = http.get(f"/tasks/{ended}", headers={"X-API-Key": CLIENT_KEY})
        assert gone.status_code == 404
    unreachable = _accord("admin", "purge", served.url, live, *operator, "--timeout", "5")
    assert unreachable.returncode == 3
