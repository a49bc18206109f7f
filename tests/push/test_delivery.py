"""Push delivery end to end: the engine, a store, the dispatcher and a real webhook receiver on
loopback (admitted by the allow-list)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path

import pytest
from tests.marks import POSTGRES

from accord.push import PushDispatcher, PushSettings
from accord.store import TaskStore
from accord.wire import A2AError, ErrorKind
from accord.wire._codec import decode
from accord.wire._model import StreamResponse, Task, TaskState

from .helpers import (
    ALICE,
    BACKENDS,
    FAST,
    ask_then_finish,
    kinds,
    make_store,
    request,
    running,
    send,
    settled,
    three_artifacts,
    webhook,
)
from .helpers import request as request_
from .receiver import Received, Receiver


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> TaskStore:
    return make_store(request.param, tmp_path, request)


def all_delivered(count: int):  # type: ignore[no-untyped-def]
    return lambda receiver: len(receiver.accepted_ids()) >= count


async def test_every_event_arrives_in_order_with_headers_auth_and_token(store: TaskStore) -> None:
    async with Receiver() as receiver, running(store, three_artifacts) as (engine, _):
        config = webhook(
            receiver.url("/hooks/a"),
            token="tok-123",
            scheme="Bearer",
            credentials="secret-credentials",
        )
        task = await send(engine, request("go", push=config))
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
        await receiver.wait_for(all_delivered(6))

        got = receiver.received
        assert len(got) == 6  # no retries, no duplicates
        for index, notification in enumerate(got, start=1):
            assert notification.method == "POST" and notification.path == "/hooks/a"
            assert notification.headers["content-type"] == "application/a2a+json"
            assert notification.headers["authorization"] == "Bearer secret-credentials"
            assert notification.headers["x-a2a-notification-token"] == "tok-123"
            assert notification.event_id == f"{task.id}:{index}"
            assert notification.headers["host"] == f"127.0.0.1:{receiver.port}"
        bodies = [n.json for n in got]
        assert kinds(bodies) == ["task", "statusUpdate", *["artifactUpdate"] * 3, "statusUpdate"]
        responses = [decode(n.body, StreamResponse) for n in got]
        artifacts = [r.artifact_update.artifact.parts[0].text for r in responses[2:5]]  # type: ignore[union-attr]
        assert artifacts == ["r1", "r2", "r3"]
        assert bodies[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert bodies[0]["task"]["id"] == task.id

        delivery = await settled(store, task.id, "hook", "done")
        assert (delivery.cursor, delivery.task_seq) == (6, 6)


async def test_no_headers_for_what_is_not_set(store: TaskStore) -> None:
    async with Receiver() as receiver, running(store, three_artifacts) as (engine, _):
        task = await send(engine, request("go", push=webhook(receiver.url())))
        await receiver.wait_for(all_delivered(6))
        first = receiver.received[0].headers
        assert "authorization" not in first and "x-a2a-notification-token" not in first
        assert first["x-a2a-event-id"] == f"{task.id}:1"


async def test_a_config_created_later_gets_only_later_events(store: TaskStore) -> None:
    async with Receiver() as receiver, running(store, ask_then_finish) as (engine, _):
        task = await send(engine, request("hello"))
        assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
        await engine.create_push_config(
            webhook(receiver.url(), config_id="late", task_id=task.id), ALICE
        )
        done = await send(engine, request("bye", task_id=task.id))
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
        await receiver.wait_for(all_delivered(2))
        await settled(store, task.id, "late", "done")  # nothing more will be sent
        bodies = [n.json for n in receiver.received]
        assert kinds(bodies) == ["statusUpdate", "statusUpdate"]
        states = [b["statusUpdate"]["status"]["state"] for b in bodies]
        assert states == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]


async def test_configs_on_a_completed_task_stay_readable_and_get_nothing(
    store: TaskStore,
) -> None:
    async with Receiver() as receiver, running(store, three_artifacts) as (engine, _):
        task = await send(engine, request("go", push=webhook(receiver.url())))
        await receiver.wait_for(all_delivered(6))
        late = webhook(receiver.url("/late"), config_id="late", task_id=task.id)
        await engine.create_push_config(late, ALICE)
        await asyncio.sleep(0.3)  # a window: anything sent to the late config would arrive
        assert all(n.path == "/webhook" for n in receiver.received)
        ids = [c.id for c in await engine.list_push_configs(task.id, ALICE)]
        assert ids == ["hook", "late"]
        assert (await engine.get_push_config(task.id, "hook", ALICE)).url == receiver.url()


async def test_every_config_gets_everything_and_a_slow_one_holds_up_no_other(
    store: TaskStore,
) -> None:
    release = asyncio.Event()

    async def slow(request: object, index: int) -> int:
        await release.wait()
        return 200

    async with (
        Receiver() as fast_receiver,
        Receiver(slow) as slow_receiver,
        running(store, ask_then_finish) as (engine, _),
    ):
        task = await send(
            engine, request("hello", push=webhook(slow_receiver.url(), config_id="slow"))
        )
        await engine.create_push_config(
            webhook(fast_receiver.url(), config_id="fast", task_id=task.id), ALICE
        )
        done = await send(engine, request("bye", task_id=task.id))
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
        await fast_receiver.wait_for(all_delivered(2))  # while "slow" is still stuck on #1
        assert slow_receiver.accepted == []
        release.set()
        await slow_receiver.wait_for(all_delivered(4))
        assert kinds([n.json for n in slow_receiver.accepted]) == [
            "task",
            "statusUpdate",
            "statusUpdate",
            "statusUpdate",
        ]


async def test_a_receiver_failing_several_times_then_recovering_gets_everything_once(
    store: TaskStore,
) -> None:
    # Every second request fails at first (500, 503, 404 and a redirect), then all succeed.
    answers = iter([500, 200, 503, 200, 404, 200, 302])

    async def flaky(request: object, index: int) -> int:
        return next(answers, 200)

    async with Receiver(flaky) as receiver, running(store, three_artifacts) as (engine, _):
        task = await send(engine, request("go", push=webhook(receiver.url())))
        await receiver.wait_for(all_delivered(6))
        await settled(store, task.id, "hook", "done")  # nothing more will be sent
        assert receiver.accepted_ids() == [f"{task.id}:{seq}" for seq in range(1, 7)]
        # Failed attempts were retried: each event was accepted exactly once, in order.
        assert [r.event_id for r in receiver.accepted] == receiver.accepted_ids()
        assert len(receiver.received) == 10
        delivery = await settled(store, task.id, "hook", "done")
        assert delivery.failures == 0


async def test_after_max_attempts_the_config_is_failing_and_logged_without_secrets(
    store: TaskStore, caplog: pytest.LogCaptureFixture
) -> None:
    settings = dataclasses.replace(FAST, max_attempts=3)
    caplog.set_level(logging.INFO, logger="accord.push")
    async with (
        Receiver(lambda r, i: 500) as receiver,
        running(store, three_artifacts, settings) as (engine, _),
    ):
        config = webhook(
            receiver.url("/path-secret"),
            token="token-secret",
            scheme="Bearer",
            credentials="credential-secret",
        )
        task = await send(engine, request("go", push=config))
        await receiver.wait_for(lambda r: len(r.received) >= 3)
        delivery = await settled(store, task.id, "hook", "failing")
        assert delivery.failures == 3 and delivery.cursor == 0
        assert "HTTP 500" in delivery.last_error
        await asyncio.sleep(0.4)  # a window of two poll rounds: a failing config is not retried
        assert len(receiver.received) == 3
        assert [d.config.config.id for d in await store.list_push_deliveries("failing")] == ["hook"]
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "failing" in warnings[0].getMessage()
        logged = "\n".join(r.getMessage() for r in caplog.records)
        for secret in ("path-secret", "token-secret", "credential-secret"):
            assert secret not in logged

        # The owner fixes the receiver and registers the config again: delivery resumes.
        receiver.policy = lambda r, i: 200
        await engine.create_push_config(
            webhook(receiver.url("/path-secret"), config_id="hook", task_id=task.id), ALICE
        )
        await receiver.wait_for(all_delivered(6))
        assert receiver.accepted_ids() == [f"{task.id}:{seq}" for seq in range(1, 7)]


async def test_deleting_a_config_stops_its_delivery(store: TaskStore) -> None:
    async with (
        Receiver(lambda r, i: 503) as receiver,
        running(store, ask_then_finish) as (
            engine,
            _,
        ),
    ):
        task = await send(engine, request("hi", push=webhook(receiver.url())))
        await receiver.wait_for(lambda r: len(r.received) >= 2)
        await engine.delete_push_config(task.id, "hook", ALICE)
        await asyncio.sleep(0.1)  # (an attempt on its way when it was deleted may land)
        seen = len(receiver.received)
        await asyncio.sleep(0.4)  # a window of two poll rounds: the deleted config gets nothing
        assert len(receiver.received) <= seen + 1  # at most the attempt already in flight
        assert await store.get_push_delivery(task.id, "hook") is None


async def test_a_webhook_that_hangs_times_out_and_is_retried(store: TaskStore) -> None:
    settings = dataclasses.replace(FAST, timeout_s=0.3)
    hang_once = asyncio.Event()

    async def hang_first(request: object, index: int) -> int:
        if index == 0:
            await hang_once.wait()  # never set: the sender gives up
        return 200

    async with (
        Receiver(hang_first) as receiver,
        running(store, three_artifacts, settings) as (
            engine,
            _,
        ),
    ):
        task = await send(engine, request("go", push=webhook(receiver.url())))
        await receiver.wait_for(all_delivered(6))
        assert receiver.accepted_ids() == [f"{task.id}:{seq}" for seq in range(1, 7)]
        assert receiver.received[0].event_id == f"{task.id}:1"


async def test_registration_refuses_an_inward_url(store: TaskStore) -> None:
    async with running(store, ask_then_finish, PushSettings()) as (engine, _):
        with pytest.raises(A2AError) as refused:
            await send(engine, request("hi", push=webhook("http://127.0.0.1:9/x")))
        assert refused.value.kind is ErrorKind.INVALID_PARAMS
        assert "configuration.taskPushNotificationConfig.url" in str(refused.value)
        assert await store.count_tasks("t1") == 0  # refused before anything was created

        task = await send(engine, request("hi"))
        with pytest.raises(A2AError) as refused:
            await engine.create_push_config(
                webhook("http://169.254.169.254/latest", task_id=task.id), ALICE
            )
        assert refused.value.kind is ErrorKind.INVALID_PARAMS
        assert refused.value.message.startswith("url: ")
        assert "metadata" in refused.value.message
        assert await engine.list_push_configs(task.id, ALICE) == []


async def test_a_graceful_stop_gives_claims_back_for_the_next_start(tmp_path: Path) -> None:
    """Stopped while a post hangs: the next start delivers at once, not after the lease."""
    settings = dataclasses.replace(FAST, timeout_s=60.0)  # a lease of three minutes
    hold = asyncio.Event()

    async def hang_first(request: Received, index: int) -> int:
        if index == 0:
            hold.set()
            await asyncio.Event().wait()
        return 200

    async with Receiver(hang_first) as receiver:
        store = make_store("sqlite", tmp_path)
        async with running(store, three_artifacts, settings) as (engine, _):
            task = await send(engine, request("go", push=webhook(receiver.url())))
            await hold.wait()
        store = make_store("sqlite", tmp_path)
        async with running(store, three_artifacts, settings):
            await receiver.wait_for(all_delivered(6), timeout=10)
    assert receiver.accepted_ids() == [f"{task.id}:{seq}" for seq in range(1, 7)]


async def test_with_one_worker_every_config_still_gets_everything(store: TaskStore) -> None:
    settings = dataclasses.replace(FAST, max_workers=1, concurrency=1)
    async with Receiver() as receiver, running(store, ask_then_finish, settings) as (engine, _):
        task = await send(engine, request("hi", push=webhook(receiver.url("/0"), config_id="c0")))
        for index in (1, 2):
            config = webhook(receiver.url(f"/{index}"), config_id=f"c{index}", task_id=task.id)
            await engine.create_push_config(config, ALICE)
        await send(engine, request("bye", task_id=task.id))
        await receiver.wait_for(lambda r: len(r.accepted) == 8)
        paths = [n.path for n in receiver.accepted]
        assert (paths.count("/0"), paths.count("/1"), paths.count("/2")) == (4, 2, 2)
        for index in (0, 1, 2):
            seqs = [
                int(n.event_id.split(":")[1]) for n in receiver.accepted if n.path == f"/{index}"
            ]
            assert seqs == sorted(seqs)
            await settled(store, task.id, f"c{index}", "done")


async def test_no_secret_reaches_any_log_at_any_level(
    store: TaskStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: accord's, httpx's, httpcore's
    answers = iter([500, 302])

    async with (
        Receiver(lambda r, i: next(answers, 200)) as receiver,
        running(store, three_artifacts) as (engine, _),
    ):
        config = webhook(
            receiver.url("/hook/path-secret?key=query-secret"),
            token="token-secret",
            scheme="Bearer",
            credentials="credential-secret",
        )
        await send(engine, request("go", push=config))
        await receiver.wait_for(all_delivered(6))
    assert receiver.received[0].path == "/hook/path-secret?key=query-secret"
    assert any(r.name.startswith("accord.push") for r in caplog.records)  # failures were logged
    logged = "\n".join(f"{r.name} {r.getMessage()}" for r in caplog.records)
    for secret in ("path-secret", "query-secret", "token-secret", "credential-secret"):
        assert secret not in logged


async def test_the_poll_delivers_what_no_wake_up_announced(store: TaskStore) -> None:
    settings = dataclasses.replace(FAST, max_watched=0)  # commits wake nothing
    async with Receiver() as receiver, running(store, ask_then_finish, settings) as (engine, _):
        task = await send(engine, request("hi", push=webhook(receiver.url())))
        await send(engine, request("bye", task_id=task.id))
        await receiver.wait_for(all_delivered(4))
        assert receiver.accepted_ids() == [f"{task.id}:{seq}" for seq in (1, 2, 4, 5)]


@pytest.mark.parametrize("kind", ["sqlite", POSTGRES])
async def test_two_dispatchers_on_one_database_deliver_each_event_once(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Two nodes on one database, one posting slot each, a webhook that answers in 0.3 s: a
    config waits longer for a slot (seven configs take turns: 2.1 s) than its claim lasts
    (3 x 0.6 s), so only renewing the claim while waiting keeps the other node from taking
    it. Nothing fails, so each event arrives exactly once, in order."""
    settings = dataclasses.replace(FAST, timeout_s=0.6, concurrency=1)

    async def slowish(received: Received, index: int) -> int:
        await asyncio.sleep(0.3)
        return 200

    other_store = make_store(kind, tmp_path, request)
    other = PushDispatcher(other_store, settings)
    async with Receiver(slowish) as receiver:
        store = make_store(kind, tmp_path, request)
        async with running(store, three_artifacts, settings) as (engine, _):
            await other_store.open()
            await other.start()
            try:
                tasks = [
                    await send(engine, request_(f"go {n}", push=webhook(receiver.url(f"/{n}"))))
                    for n in range(7)
                ]
                await receiver.wait_for(lambda r: len(r.accepted) >= 42, timeout=40)
                for task in tasks:  # nothing more will be sent
                    await settled(store, task.id, "hook", "done")
            finally:
                await other.stop()
                await other_store.close()
    for n, task in enumerate(tasks):
        got = [r.event_id for r in receiver.accepted if r.path == f"/{n}"]
        assert got == [f"{task.id}:{seq}" for seq in range(1, 7)]  # once each, in order
    assert len(receiver.received) == 42
