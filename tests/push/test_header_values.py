"""A push config's token and credentials travel as HTTP header values. One that no header can
carry (CR, LF, NUL, other controls, non-ASCII, spaces at either end) is refused when it is
registered, naming the field and never quoting the value; one stored before that check (by an
older accord) fails at delivery, and neither the logs, the stored error nor ``accord admin
push-deliveries`` ever show the secret."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from accord.cli._main import main
from accord.core._records import PushConfigRecord
from accord.push._headers import scrub
from accord.store import SqliteStore, TaskStore
from accord.wire import A2AError, ErrorKind
from accord.wire._model import AuthenticationInfo, TaskPushNotificationConfig

from .helpers import ALICE, BACKENDS, ask_then_finish, make_store, request, running, send, settled
from .helpers import webhook as webhook_
from .receiver import Receiver

SECRET = "s3cret-7d1e0a"

# Each one: how a value breaks a header, with the secret inside it.
UNSENDABLE = [
    f"{SECRET}\r\nX-Injected: 1",
    f"{SECRET}\nX-Injected: 1",
    f"{SECRET}\x00",
    f"{SECRET}\x7f",
    f"{SECRET}\t",
    f"{SECRET}-é",
    f"{SECRET} ",
    f" {SECRET}",
]


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> TaskStore:
    return make_store(request.param, tmp_path, request)


def _config(url: str, field: str, value: str, task_id: str = "") -> TaskPushNotificationConfig:
    if field == "token":
        return webhook_(url, task_id=task_id, token=value)
    if field == "authentication.credentials":
        return webhook_(url, task_id=task_id, scheme="Bearer", credentials=value)
    return webhook_(url, task_id=task_id, scheme=value, credentials="c")


def _assert_refused(error: A2AError, field: str) -> None:
    assert error.kind is ErrorKind.INVALID_PARAMS
    assert [v.field for v in error.violations] == [field]
    assert SECRET not in str(error) and SECRET not in repr(error.violations)


@pytest.mark.parametrize("value", UNSENDABLE)
@pytest.mark.parametrize("field", ["token", "authentication.credentials", "authentication.scheme"])
async def test_registration_refuses_a_value_no_header_can_carry(
    field: str, value: str, tmp_path: Path
) -> None:
    store = make_store("memory", tmp_path)
    async with running(store, ask_then_finish) as (engine, _):
        url = "http://127.0.0.1:9/hook"
        with pytest.raises(A2AError) as inline:
            await send(engine, request("hi", push=_config(url, field, value)))
        _assert_refused(inline.value, f"configuration.taskPushNotificationConfig.{field}")
        assert await store.count_tasks("t1") == 0  # refused before anything was created

        task = await send(engine, request("hi"))
        with pytest.raises(A2AError) as created:
            await engine.create_push_config(_config(url, field, value, task.id), ALICE)
        _assert_refused(created.value, field)
        assert await engine.list_push_configs(task.id, ALICE) == []


async def test_printable_values_with_inner_spaces_are_accepted(tmp_path: Path) -> None:
    store = make_store("memory", tmp_path)
    async with running(store, ask_then_finish) as (engine, _):
        task = await send(engine, request("hi"))
        config = webhook_(
            "http://127.0.0.1:9/hook",
            task_id=task.id,
            token="a b~!",
            scheme="Basic",
            credentials="x y",
        )
        assert (await engine.create_push_config(config, ALICE)).token == "a b~!"


async def test_a_stored_unsendable_config_fails_without_showing_its_secret(
    store: TaskStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with Receiver() as receiver, running(store, ask_then_finish) as (engine, _):
        task = await send(engine, request("hi"))
        # As an accord without the registration check stored it.
        bad = TaskPushNotificationConfig(
            url=receiver.url(),
            id="hook",
            task_id=task.id,
            tenant=ALICE.tenant,
            token=SECRET,
            authentication=AuthenticationInfo(scheme="Bearer", credentials=UNSENDABLE[0]),
        )
        await store.put_push_config(PushConfigRecord(bad, ALICE.tenant, 1), 0)
        engine.push_config_stored(task.id)
        delivery = await settled(store, task.id, "hook", "failing")
    assert delivery.failures == 1  # it can never be sent: not retried
    assert "authentication.credentials" in delivery.last_error
    assert SECRET not in delivery.last_error
    assert receiver.received == []
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "is failing" in logged and SECRET not in logged


def test_scrub_removes_a_value_quoted_as_written_or_escaped() -> None:
    config = webhook_("http://h/", token=SECRET, scheme="Bearer", credentials=UNSENDABLE[0])
    quoted = f"Illegal header value {(('Bearer ' + UNSENDABLE[0]).encode())!r} / {SECRET}"
    assert SECRET not in scrub(quoted, config)
    assert scrub("h answered HTTP 503", config) == "h answered HTTP 503"


async def _stored_by_an_older_accord(path: Path) -> None:
    """A config no header can carry, and the error an older accord stored for it, which
    quoted the header (as the HTTP client's refusal does)."""
    store = SqliteStore(str(path))
    async with running(store, ask_then_finish) as (engine, _):
        task = await send(engine, request("hi"))
        bad = TaskPushNotificationConfig(
            url="https://hooks.example/x",
            id="hook",
            task_id=task.id,
            tenant=ALICE.tenant,
            authentication=AuthenticationInfo(scheme="Bearer", credentials=UNSENDABLE[0]),
        )
        await store.put_push_config(PushConfigRecord(bad, ALICE.tenant, 1), 0)
        header = ("Bearer " + UNSENDABLE[0]).encode()
        await store.update_push_delivery(
            task.id,
            "hook",
            cursor=0,
            state="failing",
            failures=8,
            last_error=f"https://hooks.example:443: Illegal header value {header!r}",
            next_attempt_ms=0,
        )


def test_admin_never_shows_a_secret_an_older_accord_stored_in_an_error(tmp_path: Path) -> None:
    path = tmp_path / "accord.db"
    asyncio.run(_stored_by_an_older_accord(path))
    admin = ["admin", "push-deliveries", "--store", f"sqlite:///{path}"]
    table = CliRunner().invoke(main, admin)
    assert table.exit_code == 0, table.output
    assert "hook" in table.output and SECRET not in table.output
    listed = CliRunner().invoke(main, [*admin, "--json"])
    assert listed.exit_code == 0, listed.output
    assert SECRET not in listed.output
    row = json.loads(listed.stdout)[0]
    assert row["lastError"].startswith("https://hooks.example:443: Illegal header value")
