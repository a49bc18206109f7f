"""Authentication declared in the TOML settings guards every binding and the card says so."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import jwt

from accord.app._build import build_app
from accord.app._settings import load

SECRET = "a-test-secret-that-is-long-enough-0123456789"
CONFIG = f"""
store = "memory://"

[[principals]]
identity = "worker-1"
actors = ["a2a.tasks.Agent"]
api_key = "worker-key-0123456789abcdef"

[jwt]
secret = "{SECRET}"
tenant_claim = "org"
"""


async def test_toml_principals_and_jwt_guard_all_bindings(tmp_path: Path) -> None:
    path = tmp_path / "accord.toml"
    path.write_text(CONFIG)
    settings = load(str(path))
    assert settings.auth_configured
    app = build_app(settings)
    await app.service.engine.start()
    token = jwt.encode(
        {"sub": "alice", "org": "acme", "exp": int(time.time()) + 60}, SECRET, algorithm="HS256"
    )
    alice = {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
        assert card["securitySchemes"]["bearer"] == {
            "httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}
        }
        assert "apiKey" in card["securitySchemes"]

        send = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
            },
        }
        anonymous = await http.post("/", json=send, headers={"A2A-Version": "1.0"})
        assert "error" in anonymous.json()
        answered = await http.post("/", json=send, headers=alice)
        task_id = answered.json()["result"]["task"]["id"]

        assert (await http.get(f"/tasks/{task_id}", headers=alice)).status_code == 200
        assert (
            await http.get(f"/tasks/{task_id}", headers={"A2A-Version": "1.0"})
        ).status_code == 401
        expired = jwt.encode(
            {"sub": "alice", "org": "acme", "exp": int(time.time()) - 5}, SECRET, algorithm="HS256"
        )
        late = {"Authorization": f"Bearer {expired}", "A2A-Version": "1.0"}
        assert (await http.get(f"/tasks/{task_id}", headers=late)).status_code == 401

        # the surface: alice is a client of tenant acme; the worker key is the Agent
        view = await http.get("/tasks/views/tasks", headers=alice)
        assert [row["id"] for row in view.json()["rows"]] == [task_id]
        worker = {"X-API-Key": "worker-key-0123456789abcdef"}
        refused = await http.post("/tasks/commands/tasks:get", json={"id": task_id}, headers=worker)
        assert refused.json() == {"refused": "not granted", "actor": "a2a.tasks.Agent"}
        # the worker is in tenant "", so acme's task is not its to see
        rows = (await http.get("/tasks/views/allTasks", headers=worker)).json()["rows"]
        assert rows == []
        assert (
            await http.post("/tasks/commands/tasks:work", json={"id": task_id})
        ).status_code == 401
    await app.service.engine.stop()
