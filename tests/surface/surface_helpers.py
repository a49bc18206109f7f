"""An in-process accord with principals, driven over the command surface, and the seed's
response schemas to check every answer against."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import jsonschema_rs

from accord.app._build import build_app
from accord.app._settings import Settings
from accord.server._app import A2AApplication
from accord.surface._contract import seed_document

KEYS = {
    "client": "client-key-0123456789abcdef",
    "agent": "agent-key-0123456789abcdef",
    "nobody": "nobody-key-0123456789abcdef",
    "other-client": "other-client-key-0123456789abcdef",
    "other-agent": "other-agent-key-0123456789abcdef",
}
PRINCIPALS = [
    {
        "identity": "client",
        "actors": ["a2a.tasks.Client", "a2a.discovery.Client"],
        "api_key": KEYS["client"],
    },
    {"identity": "agent", "actors": ["a2a.tasks.Agent"], "api_key": KEYS["agent"]},
    {"identity": "nobody", "actors": [], "api_key": KEYS["nobody"]},
    {
        "identity": "other-client",
        "tenant": "other",
        "actors": ["a2a.tasks.Client"],
        "api_key": KEYS["other-client"],
    },
    {
        "identity": "other-agent",
        "tenant": "other",
        "actors": ["a2a.tasks.Agent"],
        "api_key": KEYS["other-agent"],
    },
]


def response_schema(path: str, status: int) -> dict[str, Any]:
    document = seed_document()
    operation = next(iter(document["paths"][path].values()))
    schema = dict(operation["responses"][str(status)]["content"]["application/json"]["schema"])
    schema["components"] = document["components"]
    schema["x-ess-entities"] = document["x-ess-entities"]
    return schema


@dataclass
class Surface:
    app: A2AApplication
    http: httpx.AsyncClient

    async def post(
        self, path: str, body: Any, who: str | None = "client", version: str | None = "1.0"
    ) -> tuple[int, Any]:
        headers = {"X-API-Key": KEYS[who]} if who else {}
        if version:
            headers["A2A-Version"] = version
        response = await self.http.post(path, json=body, headers=headers)
        data = response.json()
        if response.status_code in (200, 202, 403, 404, 409, 501, 502):
            errors = [
                e.message
                for e in jsonschema_rs.validator_for(
                    response_schema(path, response.status_code)
                ).iter_errors(data)
            ]
            assert errors == [], (path, response.status_code, data, errors)
        return response.status_code, data

    async def get(self, path: str, who: str | None = "client", **params: str) -> tuple[int, Any]:
        headers = {"X-API-Key": KEYS[who]} if who else {}
        response = await self.http.get(path, params=params, headers=headers)
        data = response.json()
        if response.status_code in (200, 403):
            validator = jsonschema_rs.validator_for(response_schema(path, response.status_code))
            errors = [e.message for e in validator.iter_errors(data)]
            assert errors == [], (path, data, errors)
        return response.status_code, data

    async def create(self, text: str = "hi", who: str = "client") -> str:
        status, body = await self.post(
            "/tasks/commands/message:send",
            {"message": message(text), "configuration": {"returnImmediately": True}},
            who,
        )
        assert status == 200, body
        task_id: str = body["response"]["task"]["id"]
        return task_id

    async def move(self, task_id: str, move: str, who: str = "agent") -> int:
        status, _ = await self.post(f"/tasks/commands/tasks:{move}", {"id": task_id}, who)
        return status


def message(text: str = "hi", **fields: Any) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]} | fields


@asynccontextmanager
async def surface(agent: Any = None, **settings: Any) -> AsyncIterator[Surface]:
    options: dict[str, Any] = {"store": "memory://", "agent": "remote", "principals": PRINCIPALS}
    options.update(settings)
    app = build_app(Settings(**options), agent)
    await app.service.engine.start()
    http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost", timeout=10
    )
    try:
        yield Surface(app, http)
    finally:
        await http.aclose()
        await app.service.engine.stop()
