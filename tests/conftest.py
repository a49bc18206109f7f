"""Fixtures every test directory can use.

PostgreSQL: the tests create their own database on the server named by ``ACCORD_TEST_PG``
(default: the local server, user postgres, trust auth) and drop it at the end. Nothing is
skipped when the server is missing: those tests fail with the connection error.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import asyncpg
import pytest
from hypothesis import settings as hypothesis_settings
from tests import processes
from tests.js.install import npm_ci

# A shared 2-core machine makes wall-clock deadlines meaningless: no test fails for being slow.
hypothesis_settings.register_profile("accord", deadline=None)
hypothesis_settings.load_profile("accord")

# The suite's marks, added at collection and checked while each test runs.
pytest_plugins = ["tests.marks"]

LOG_TAIL_CHARS = 6000


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    """A failing test's report ends with the last lines of each server process it started,
    so that a failure seen once (on a loaded machine, say) can be read after the fact."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed and call.when in ("setup", "call"):
        for server in processes.started:
            try:
                tail = server.log()[-LOG_TAIL_CHARS:]
            except OSError as exc:
                tail = f"(its log could not be read: {exc})"
            report.sections.append((f"log of {server.log_path.name}", tail))
    if call.when == "teardown":
        processes.started.clear()


@pytest.fixture(scope="session")
def js_sdk() -> Path:
    """tests/js with the official JS SDK installed from its lock file (``npm ci``, run once,
    and only when node_modules is missing or older than the lock file)."""
    return npm_ci()


ADMIN_DSN = os.environ.get("ACCORD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def _with_database(dsn: str, database: str) -> str:
    base, _, query = dsn.partition("?")
    root = base.rsplit("/", 1)[0]
    return f"{root}/{database}" + (f"?{query}" if query else "")


async def _execute(dsn: str, statement: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def _execute_sync(dsn: str, statement: str) -> None:
    # Its own thread and loop: fixtures may be set up from inside a running loop.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _execute(dsn, statement)).result()


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh database for this test session; its DSN."""
    name = f"accord_test_{uuid.uuid4().hex[:12]}"
    _execute_sync(ADMIN_DSN, f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(ADMIN_DSN, name)
    finally:
        _execute_sync(ADMIN_DSN, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _new_schema(database: str) -> tuple[str, str]:
    """A new empty schema in ``database``: its name, and a DSN whose connections use it."""
    schema = f"s_{uuid.uuid4().hex[:12]}"
    _execute_sync(database, f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in database else "?"
    return schema, f"{database}{separator}search_path={schema}"


@pytest.fixture
def pg_url(pg_database: str) -> Iterator[str]:
    """A DSN whose connections work in an empty schema of their own (one per test)."""
    schema, url = _new_schema(pg_database)
    yield url
    _execute_sync(pg_database, f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(scope="module")
def pg_module_url(pg_database: str) -> Iterator[str]:
    """Like ``pg_url``, shared by the tests of one module (e.g. with servers started once)."""
    schema, url = _new_schema(pg_database)
    yield url
    _execute_sync(pg_database, f"DROP SCHEMA {schema} CASCADE")
