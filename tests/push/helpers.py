"""Shared pieces of the push tests: an engine with a dispatcher, agents, requests."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.marks import STORES
from tests.waiting import until

from accord.agents._api import RequestContext, TaskHandle
from accord.core._caller import Caller
from accord.engine import Engine
from accord.push import Guard, PushDispatcher, PushSettings, Resolver, system_resolver
from accord.push._ssrf import AddressPolicy
from accord.store import MemoryStore, SqliteStore, TaskStore
from accord.store._base import PushDelivery
from accord.store._postgres import PostgresStore
from accord.wire._model import (
    UNSET,
    AuthenticationInfo,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
)

ALICE = Caller(identity="alice", tenant="t1")

FAST = PushSettings(
    allow=("127.0.0.1/32",),
    timeout_s=2.0,
    max_attempts=8,
    retry_base_s=0.01,
    retry_max_s=0.05,
    poll_interval_s=0.2,
)


BACKENDS = STORES


def make_store(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest | None = None
) -> TaskStore:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SqliteStore(str(tmp_path / "push.db"))
    assert request is not None
    return PostgresStore(request.getfixturevalue("pg_url"))


@contextlib.asynccontextmanager
async def running(
    store: TaskStore,
    agent: object,
    settings: PushSettings = FAST,
    resolver: Resolver = system_resolver,
) -> AsyncIterator[tuple[Engine, PushDispatcher]]:
    engine = Engine(store, agent)  # type: ignore[arg-type]
    guard = Guard(AddressPolicy(settings.allow), resolver)
    dispatcher = PushDispatcher(store, settings, guard=guard)
    engine.attach_push(dispatcher)
    async with engine:
        yield engine, dispatcher


def webhook(
    url: str,
    *,
    config_id: str = "hook",
    task_id: str = "",
    token: str = "",
    scheme: str = "",
    credentials: str = "",
) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(
        url=url,
        id=config_id,
        task_id=task_id,
        token=token,
        authentication=AuthenticationInfo(scheme=scheme, credentials=credentials)
        if scheme
        else UNSET,
    )


def request(
    text: str, *, task_id: str = "", push: TaskPushNotificationConfig | None = None
) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=f"m-{text}", role=Role.USER, parts=[Part(text=text)], task_id=task_id
        ),
        configuration=SendMessageConfiguration(
            task_push_notification_config=push if push is not None else UNSET
        ),
    )


async def three_artifacts(ctx: RequestContext, task: TaskHandle) -> None:
    """working, artifacts r1 r2 r3, completed: six streamed events with the task."""
    await task.start_working()
    for index in (1, 2, 3):
        await task.update_artifact(text=f"r{index}", artifact_id=f"a{index}", last_chunk=True)
    await task.complete("done")


async def ask_then_finish(ctx: RequestContext, task: TaskHandle) -> None:
    """input-required on the first message; working, then completed on the next."""
    if ctx.task is None:
        await task.require_input("more?")
    else:
        await task.start_working()
        await task.complete("thanks")


def kinds(bodies: list[dict[str, object]]) -> list[str]:
    return [next(iter(body)) for body in bodies]


async def settled(store: TaskStore, task_id: str, config_id: str, state: str) -> PushDelivery:
    """The config's delivery once it reaches ``state`` ("done": the dispatcher has delivered
    all it ever will to that config)."""

    async def reached() -> PushDelivery | None:
        delivery = await store.get_push_delivery(task_id, config_id)
        return delivery if delivery is not None and delivery.state == state else None

    return await until(reached, f"{task_id}/{config_id} to become {state}")


async def send(engine: Engine, req: SendMessageRequest) -> Task:
    """SendMessage that must answer with a task."""
    task = await engine.send_message(req, ALICE)
    assert isinstance(task, Task)
    return task
