"""A harness server with media on, in-process, with three principals: alice and bob of
tenant acme, eve of tenant other."""

from __future__ import annotations

import base64
import dataclasses
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from accord.app._build import build_app
from accord.app._settings import Principal, Settings
from accord.harness import HarnessSettings, from_settings
from accord.harness.models import FunctionModel, Model
from accord.media import MediaSettings

ALICE = {"X-API-Key": "alice-key-0123456789", "A2A-Version": "1.0"}
BOB = {"X-API-Key": "bob-key-0123456789ab", "A2A-Version": "1.0"}
EVE = {"X-API-Key": "eve-key-0123456789ab", "A2A-Version": "1.0"}
KEYS = {
    "alice-key-0123456789": Principal("alice", "acme"),
    "bob-key-0123456789ab": Principal("bob", "acme"),
    "eve-key-0123456789ab": Principal("eve", "other"),
}
# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def store_url(request: pytest.FixtureRequest, backend: str, tmp_path: Any) -> str:
    if backend == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return f"sqlite:///{tmp_path / 'media.db'}"


@asynccontextmanager
async def harness_server(
    store: str, model: Model | None = None, media: MediaSettings | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    agent = from_settings(
        HarnessSettings(model="main"), {"main": model or FunctionModel(lambda c: "got it")}
    )
    settings = dataclasses.replace(
        Settings(store=store, public_url="http://localhost"),
        api_keys=KEYS,
        media=media,
    )
    app = build_app(settings, agent)
    await app.service.engine.start()
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://localhost", timeout=30
        ) as client:
            yield client
    finally:
        await app.service.engine.stop()


def file_message(data: bytes, filename: str, media_type: str, text: str = "look") -> dict[str, Any]:
    return {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [
            {"text": text},
            {
                "raw": base64.b64encode(data).decode(),
                "filename": filename,
                "mediaType": media_type,
            },
        ],
    }


async def send(
    http: httpx.AsyncClient, message: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    response = await http.post("/message:send", json={"message": message}, headers=headers)
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()["task"]
    return task


def file_url(task: dict[str, Any]) -> str:
    """The URL the first message's file part was rewritten to."""
    [part] = [p for p in task["history"][0]["parts"] if "url" in p]
    url: str = part["url"]
    return url
