from __future__ import annotations

import dataclasses
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from accord.server.app import A2AApplication
from accord.server.build import build_app
from accord.server.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: examples/

Serve = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@asynccontextmanager
async def serve_app(app: A2AApplication, **client_options: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client talking to ``app`` in-process; the engine runs for the block's duration
    (httpx's ASGI transport does not run the lifespan)."""
    await app.service.engine.start()
    try:
        headers = {"A2A-Version": "1.0", **client_options.pop("headers", {})}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://testserver", headers=headers, **client_options
        ) as client:
            yield client
    finally:
        await app.service.engine.stop()


@asynccontextmanager
async def serve_settings(
    agent: Any = None, *, client_options: dict[str, Any] | None = None, **overrides: Any
) -> AsyncIterator[httpx.AsyncClient]:
    settings = dataclasses.replace(Settings(store="memory://"), **overrides)
    async with serve_app(build_app(settings, agent), **(client_options or {})) as client:
        yield client


@pytest.fixture
def serve() -> Serve:
    """``async with serve(**settings) as http:`` — the echo agent (or ``agent=``) served
    in-process with memory storage and the given Settings overrides."""
    return serve_settings


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with serve_settings() as client:
        yield client
