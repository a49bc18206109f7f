"""SubscribeToTask on a harness task answers the Task, then replays the task's log (the
streamed events among its newest ``SUBSCRIBE_REPLAY`` events, each under its own sequence
number), then follows it live — as tiny-harness's server does, whose clients render events
only: a client that opens a conversation sees it. A resumed subscription (Last-Event-ID)
replays nothing; a task of another agent is not replayed."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from tests.harness.engine_kit import ALICE, BOB, brief, running, send

from accord.core._caller import Caller
from accord.engine import Engine
from accord.harness import _agent
from accord.store._memory import MemoryStore
from accord.wire._model import Message, Part, Role, SendMessageRequest, TaskState


def describe(item: Any) -> tuple[int | None, str, str]:
    """A stream item as (its sequence number, its kind, its status message's text)."""
    response = item.response
    for kind in ("task", "status_update", "artifact_update"):
        body = getattr(response, kind)
        if body is not msgspec.UNSET:
            status = getattr(body, "status", None)
            message = getattr(status, "message", msgspec.UNSET) if status is not None else None
            text = message.text() if isinstance(message, Message) else ""
            return item.seq, kind, text
    raise AssertionError(response)


async def take(stream: Any, count: int) -> list[Any]:
    taken: list[Any] = []
    async with asyncio.timeout(10):
        while len(taken) < count:
            item = await anext(stream)
            if item is not None:
                taken.append(item)
    return taken


async def streamed_log(store: MemoryStore, task_id: str) -> list[tuple[int, str]]:
    kinds = {"task": "task", "status": "status_update", "artifact": "artifact_update"}
    return [(e.seq, kinds[e.kind]) for e in await store.read_events(task_id, 0) if e.streamed]


async def test_a_subscriber_sees_the_conversation_then_follows_it_live() -> None:
    store = MemoryStore()
    async with running(store) as (engine, _):
        task = await send(engine, ALICE, brief({"bob": "watcher"}, "hello"))
        await send(engine, ALICE, "two days in June", task.id)
        log = await streamed_log(store, task.id)
        last = log[-1][0]
        stream = await engine.subscribe(task.id, BOB)
        items = [describe(item) for item in await take(stream, 1 + len(log))]
        # The Task first (under the log's newest sequence number), then the whole log again.
        assert items[0][:2] == (last, "task")
        assert [item[:2] for item in items[1:]] == log
        said = [text for _, kind, text in items[1:] if kind == "status_update" and text]
        assert said == ["main: hello", "main: hello | two days in June"]
        # Then live: the next turn, as it happens.
        await send(engine, ALICE, "and a budget", task.id)
        live = [describe(item) for item in await take(stream, 2)]
        assert [(kind, seq > last) for seq, kind, _ in live] == [("status_update", True)] * 2
        assert live[1][2] == "main: hello | two days in June | and a budget"
        await stream.aclose()


async def test_a_resumed_subscription_replays_nothing() -> None:
    store = MemoryStore()
    async with running(store) as (engine, _):
        task = await send(engine, ALICE, brief({}, "hello"))
        await send(engine, ALICE, "more", task.id)
        log = await streamed_log(store, task.id)
        # Resumed after the third event: the rest of the log, then live — no Task, no replay.
        stream = await engine.subscribe(task.id, ALICE, after_seq=log[2][0])
        rest = [describe(item)[:2] for item in await take(stream, len(log) - 3)]
        assert rest == log[3:]
        await stream.aclose()


async def test_the_replay_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_agent, "SUBSCRIBE_REPLAY", 4)
    store = MemoryStore()
    async with running(store) as (engine, _):
        task = await send(engine, ALICE, brief({}, "hello"))
        for n in range(3):
            await send(engine, ALICE, f"message {n}", task.id)
        everything = await store.read_events(task.id, 0)
        newest = everything[-4:]
        replayed = [(e.seq, e.kind) for e in newest if e.streamed]
        stream = await engine.subscribe(task.id, ALICE)
        items = await take(stream, 1 + len(replayed))
        assert [item.seq for item in items] == [everything[-1].seq] + [s for s, _ in replayed]
        await stream.aclose()


async def test_a_task_of_another_agent_is_not_replayed() -> None:
    async def echo(ctx: Any, task: Any) -> None:
        await task.require_input(f"echo: {ctx.message.text()}")

    store = MemoryStore()
    engine = Engine(store, echo)
    await engine.start()
    try:
        caller = Caller(participant="alice")
        request = SendMessageRequest(
            message=Message(message_id="m1", role=Role.USER, parts=[Part(text="hi")])
        )
        task = await engine.send_message(request, caller)
        assert task.status.state is TaskState.INPUT_REQUIRED  # type: ignore[union-attr]
        stream = await engine.subscribe(task.id, caller)  # type: ignore[union-attr]
        [first] = await take(stream, 1)
        assert describe(first)[1] == "task"
        # What follows the Task is what happens after it: nothing of the log before it.
        await engine.cancel_task(task.id, caller)  # type: ignore[union-attr]
        [after] = await take(stream, 1)
        assert after.seq > first.seq
        assert after.response.status_update.status.state is TaskState.CANCELED
        await stream.aclose()
    finally:
        await engine.stop()
