"""The ``store`` fixture of the shared store suites: each test runs on memory, SQLite and
PostgreSQL (a fresh schema of the session's test database), opened with the store extensions
its module lists in ``STORE_EXTENSIONS`` (a feature's tables, accord.store._extensions)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.marks import STORES

from accord.store import MemoryStore, SqliteStore, TaskStore
from accord.store._postgres import PostgresStore


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    backend: TaskStore
    if request.param == "memory":
        backend = MemoryStore()
    elif request.param == "sqlite":
        backend = SqliteStore(str(tmp_path / "t.db"))
    else:
        backend = PostgresStore(request.getfixturevalue("pg_url"))
    for extension in getattr(request.module, "STORE_EXTENSIONS", ()):
        backend.extend(extension)
    await backend.open()
    yield backend
    await backend.close()
