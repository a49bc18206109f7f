"""ListTasks page tokens are signed with the store's shared secret: a token is good wherever
the same database is open — after a restart (SQLite), on every node (PostgreSQL) — and
nowhere else."""

from __future__ import annotations

from pathlib import Path

import pytest

from accord.agents._echo import echo
from accord.core._caller import Caller
from accord.engine import Engine
from accord.store import MemoryStore, SqliteStore, TaskStore
from accord.store._postgres import PostgresStore
from accord.wire import A2AError, ErrorKind
from accord.wire._model import ListTasksRequest, Message, Part, Role, SendMessageRequest

ALICE = Caller(identity="alice", tenant="t1")


async def _fill(engine: Engine, count: int = 3) -> None:
    for index in range(count):
        message = Message(message_id=f"m-{index}", role=Role.USER, parts=[Part(text="hi")])
        await engine.send_message(SendMessageRequest(message=message), ALICE)


async def _first_token(engine: Engine) -> str:
    page = await engine.list_tasks(ListTasksRequest(page_size=1), ALICE)
    assert page.next_page_token
    return page.next_page_token


async def _next_ids(engine: Engine, token: str) -> list[str]:
    page = await engine.list_tasks(ListTasksRequest(page_size=5, page_token=token), ALICE)
    return [task.id for task in page.tasks]


async def test_a_token_outlives_a_restart_of_its_sqlite_store(tmp_path: Path) -> None:
    path = str(tmp_path / "t.db")
    async with Engine(SqliteStore(path), echo) as engine:
        await _fill(engine)
        token = await _first_token(engine)
        before = await _next_ids(engine, token)
    async with Engine(SqliteStore(path), echo) as engine:
        assert await _next_ids(engine, token) == before and len(before) == 2


async def test_every_postgres_node_takes_the_tokens_of_the_others(pg_url: str) -> None:
    async with (
        Engine(PostgresStore(pg_url), echo) as one,
        Engine(PostgresStore(pg_url), echo) as two,
    ):
        await _fill(one)
        token = await _first_token(one)
        assert await _next_ids(two, token) == await _next_ids(one, token)


@pytest.mark.parametrize("other", ["memory", "sqlite"])
async def test_a_token_of_another_store_is_refused(other: str, tmp_path: Path) -> None:
    async with Engine(MemoryStore(), echo) as issuer:
        await _fill(issuer)
        token = await _first_token(issuer)
    store: TaskStore = MemoryStore() if other == "memory" else SqliteStore(str(tmp_path / "o.db"))
    async with Engine(store, echo) as engine:
        await _fill(engine)
        with pytest.raises(A2AError) as refused:
            await _next_ids(engine, token)
    assert refused.value.kind is ErrorKind.INVALID_PARAMS
    assert [v.field for v in refused.value.violations] == ["pageToken"]
