from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: examples/

from server_helpers import Serve, serve_settings


@pytest.fixture
def serve() -> Serve:
    """``async with serve(**settings) as http:`` — the echo agent (or ``agent=``) served
    in-process with memory storage and the given Settings overrides."""
    return serve_settings


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with serve_settings() as client:
        yield client
