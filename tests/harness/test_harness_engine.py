"""The harness agent on the engine (in-memory store): conversations that park between turns,
the membership boundary on every operation, roles, completion by a control message that
cuts a running turn, task envelopes, and messages that arrive while a turn runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from tests.waiting import until

from accord.core._caller import Caller
from accord.core._events import Event, fold
from accord.core._records import TaskRecord
from accord.engine import Engine, StreamItem
from accord.harness import Conversation, HarnessAgent, HarnessSettings, conversation_agent
from accord.harness._wire import EVENT_MEDIA_TYPE, STATUS_KEY, TASK_KEY
from accord.store._memory import MemoryStore
from accord.wire import A2AError, ErrorKind
from accord.wire._codec import encode
from accord.wire._model import (
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)

ALICE = Caller(participant="alice")
BOB = Caller(participant="bob")  # never on a task unless a brief names him
NOBODY = Caller()

Turn = Callable[[Conversation], Awaitable[str]]


def send_request(
    parts: list[Part] | str, task_id: str = "", metadata: dict[str, Any] | None = None
) -> SendMessageRequest:
    if isinstance(parts, str):
        parts = [Part(text=parts)]
    return SendMessageRequest(
        message=Message(
            message_id=f"m-{id(parts)}",
            role=Role.USER,
            parts=parts,
            task_id=task_id,
            metadata=metadata if metadata is not None else msgspec.UNSET,
        )
    )


CONTROL = {"kind": "control", "action": "complete"}


def control() -> list[Part]:
    return [Part(data=CONTROL, media_type=EVENT_MEDIA_TYPE)]


def task_envelope(payload: dict[str, Any]) -> Part:
    return Part(data={"kind": "task", "payload": payload}, media_type=EVENT_MEDIA_TYPE)


def brief(participants: dict[str, str], **fields: Any) -> list[Part]:
    people = [{"id": who, "kind": "human", "role": role} for who, role in participants.items()]
    payload = {"name": "offsite", "goal": "a plan", "participants": people, **fields}
    return [Part(text="let's plan"), task_envelope(payload)]


async def echo_turn(conversation: Conversation) -> str:
    return f"{conversation.sender}: {conversation.text}"


@pytest.fixture
async def store() -> MemoryStore:
    return MemoryStore()


async def engine_with(store: MemoryStore, agent: HarnessAgent) -> Engine:
    engine = Engine(store, agent)
    await engine.start()
    return engine


async def send(engine: Engine, caller: Caller, parts: list[Part] | str, task_id: str = "") -> Task:
    result = await engine.send_message(send_request(parts, task_id), caller)
    assert isinstance(result, Task)
    return result


async def collect(items: AsyncIterator[StreamItem | None]) -> list[StreamItem]:
    return [item async for item in items if item is not None]


def status_text(task: Task) -> str:
    message = task.status.message
    assert not isinstance(message, msgspec.UnsetType)
    return message.text()


async def test_each_turn_parks_the_conversation_with_its_sub_state(store: MemoryStore) -> None:
    engine = await engine_with(store, conversation_agent(echo_turn))
    try:
        first = await send(engine, ALICE, "hello")
        assert first.status.state is TaskState.INPUT_REQUIRED
        assert status_text(first) == "alice: hello"
        assert first.metadata[STATUS_KEY] == {"sub_state": "awaiting-next-message"}
        extension = first.metadata[TASK_KEY]
        assert extension["lifecycle"] == "conversation"
        assert [(p["id"], p["role"], p["kind"]) for p in extension["participants"]] == [
            ("alice", "reporter", "human"),
            ("accord", "assignee", "agent"),
        ]
        # The next message with the task's id is the next turn, streamed to its end.
        items = await collect(
            await engine.send_streaming_message(send_request("again", first.id), ALICE)
        )
        kinds = ["task" if item.response.task is not msgspec.UNSET else "status" for item in items]
        assert kinds == ["task", "status", "status"]
        working, parked = (item.response.status_update for item in items[1:])
        assert working.status.state is TaskState.WORKING and working.metadata is msgspec.UNSET
        assert parked.status.state is TaskState.INPUT_REQUIRED
        assert parked.metadata == {STATUS_KEY: {"sub_state": "awaiting-next-message"}}
        task = await engine.get_task(first.id, ALICE)
        assert status_text(task) == "alice: again"
        # The sub-state leaves Task.metadata with INPUT_REQUIRED; the log folds to the task.
        events = await store.read_events(first.id, 0)
        snapshots = [fold(events[:n]) for n in range(1, len(events) + 1)]
        for snapshot in snapshots:
            assert snapshot is not None
            parked_now = snapshot.status.state is TaskState.INPUT_REQUIRED
            assert (STATUS_KEY in (snapshot.metadata or {})) is parked_now
        record = await store.get_task(first.id, "")
        assert record is not None and fold(events) == record.task
    finally:
        await engine.stop()


async def test_a_stranger_gets_the_unknown_task_error_on_every_operation(
    store: MemoryStore,
) -> None:
    engine = await engine_with(store, conversation_agent(echo_turn))
    try:
        task = await send(engine, ALICE, "private")
        unknown = "00000000-0000-0000-0000-000000000000"
        config = TaskPushNotificationConfig(url="https://example.com/hook", task_id=task.id)
        operations: dict[str, Callable[[Caller, str], Awaitable[Any]]] = {
            "send": lambda who, tid: engine.send_message(send_request("hi", tid), who),
            "stream": lambda who, tid: engine.send_streaming_message(send_request("hi", tid), who),
            "get": lambda who, tid: engine.get_task(tid, who),
            "get json": lambda who, tid: engine.get_task_json(tid, who),
            "subscribe": lambda who, tid: engine.subscribe(tid, who),
            "cancel": lambda who, tid: engine.cancel_task(tid, who),
            "control": lambda who, tid: engine.send_message(send_request(control(), tid), who),
            "create push": lambda who, tid: engine.create_push_config(
                msgspec.structs.replace(config, task_id=tid), who
            ),
            "get push": lambda who, tid: engine.get_push_config(tid, "c1", who),
            "list push": lambda who, tid: engine.list_push_configs(tid, who),
            "delete push": lambda who, tid: engine.delete_push_config(tid, "c1", who),
        }
        before = await store.read_events(task.id, 0)
        for name, operation in operations.items():
            for who in (BOB, NOBODY):
                if who is NOBODY and name in ("send", "stream", "control"):
                    continue  # a message asserting nobody is refused before the task
                with pytest.raises(A2AError) as theirs:
                    await operation(who, task.id)
                with pytest.raises(A2AError) as unknowns:
                    await operation(who, unknown)
                assert theirs.value.kind is ErrorKind.TASK_NOT_FOUND, name
                mine = encode(theirs.value.details()).replace(task.id.encode(), b"ID")
                other = encode(unknowns.value.details()).replace(unknown.encode(), b"ID")
                assert mine == other, name
                assert theirs.value.message.replace(
                    task.id, "ID"
                ) == unknowns.value.message.replace(unknown, "ID"), name
        assert await store.read_events(task.id, 0) == before  # nothing appended
        listed = await engine.list_tasks(ListTasksRequest(), BOB)
        assert listed.tasks == [] and listed.total_size == 0
        mine = await engine.list_tasks(ListTasksRequest(), ALICE)
        assert [t.id for t in mine.tasks] == [task.id]
    finally:
        await engine.stop()


async def test_a_watcher_reads_and_talks_but_cannot_complete_or_cancel(
    store: MemoryStore,
) -> None:
    engine = await engine_with(store, conversation_agent(echo_turn))
    try:
        task = await send(engine, ALICE, brief({"bob": "watcher"}))
        said = await send(engine, BOB, "my two cents", task.id)
        assert status_text(said) == "bob: my two cents"
        assert (await engine.get_task(task.id, BOB)).id == task.id
        before = await store.read_events(task.id, 0)
        with pytest.raises(A2AError) as completing:
            await send(engine, BOB, control(), task.id)
        assert completing.value.kind is ErrorKind.UNSUPPORTED_OPERATION
        assert "watcher cannot complete" in completing.value.message
        with pytest.raises(A2AError) as canceling:
            await engine.cancel_task(task.id, BOB)
        assert canceling.value.kind is ErrorKind.UNSUPPORTED_OPERATION
        assert "watcher cannot cancel" in canceling.value.message
        assert await store.read_events(task.id, 0) == before
        # Completing is the reporter's (or an assignee's, or an admin's).
        done = await send(engine, ALICE, control(), task.id)
        assert done.status.state is TaskState.COMPLETED
        assert status_text(done) == "completed by alice"
        assert STATUS_KEY not in done.metadata
    finally:
        await engine.stop()


async def test_a_control_cuts_the_running_turn_and_completes(store: MemoryStore) -> None:
    started = asyncio.Event()
    never = asyncio.Event()
    calls: list[str] = []

    async def slow(conversation: Conversation) -> str:
        calls.append(conversation.text)
        if conversation.text == "think hard":
            started.set()
            await never.wait()
        return f"answered {conversation.text}"

    engine = await engine_with(store, conversation_agent(slow))
    try:
        task = await send(engine, ALICE, "hi")
        running = asyncio.ensure_future(send(engine, ALICE, "think hard", task.id))
        await asyncio.wait_for(started.wait(), 5)
        done = await send(engine, ALICE, control(), task.id)
        assert done.status.state is TaskState.COMPLETED
        assert status_text(done) == "completed by alice"
        # The cut turn's client sees the task as it ended; the model's answer never came.
        cut = await asyncio.wait_for(running, 5)
        assert cut.status.state is TaskState.COMPLETED
        texts = [m.text() for m in (await engine.get_task(task.id, ALICE)).history]
        assert "answered hi" in texts and "answered think hard" not in texts
        assert calls == ["hi", "think hard"]
    finally:
        await engine.stop()


async def test_completion_is_refused_while_a_sub_task_is_open(store: MemoryStore) -> None:
    engine = await engine_with(store, conversation_agent(echo_turn))
    try:
        task = await send(engine, ALICE, brief({}))
        # Two sub-tasks (conversations of their own): one is completed, one stays open.
        for n in (1, 2):
            await send(engine, ALICE, f"/sub-task part {n}", task.id)
        await send(engine, ALICE, control(), f"{task.id}.2")
        refused = await send(engine, ALICE, control(), task.id)
        assert refused.status.state is TaskState.INPUT_REQUIRED
        assert status_text(refused) == f"completion refused: unresolved sub-tasks: {task.id}.1"
        assert refused.metadata[STATUS_KEY] == {"sub_state": "awaiting-next-message"}
        # The conversation goes on.
        later = await send(engine, ALICE, "ok, later", task.id)
        assert status_text(later) == "alice: ok, later"
    finally:
        await engine.stop()


async def test_task_envelopes_change_the_task_by_role_and_streams_see_it(
    store: MemoryStore,
) -> None:
    engine = await engine_with(store, conversation_agent(echo_turn))
    try:
        task = await send(engine, ALICE, brief({"bob": "watcher", "carol": "admin"}))
        carol = Caller(participant="carol")
        # Any participant renames; the model reads what changed.
        renamed = await send(engine, BOB, [task_envelope({"name": "retreat"})], task.id)
        assert renamed.metadata[TASK_KEY]["name"] == "retreat"
        assert status_text(renamed) == "bob: [task updated by bob: name]"
        # Only an admin changes roles; the reporter cannot, nor set server fields.
        people = [
            {"id": "alice", "kind": "human", "role": "reporter"},
            {"id": "bob", "kind": "human", "role": "assignee"},
            {"id": "carol", "kind": "human", "role": "admin"},
            {"id": "accord", "kind": "agent", "role": "assignee"},
        ]
        before = await store.read_events(task.id, 0)
        with pytest.raises(A2AError) as refused:
            await send(engine, ALICE, [task_envelope({"participants": people})], task.id)
        assert refused.value.kind is ErrorKind.UNSUPPORTED_OPERATION
        with pytest.raises(A2AError) as server_field:
            await send(engine, carol, [task_envelope({"model": "x"})], task.id)
        assert server_field.value.kind is ErrorKind.INVALID_PARAMS
        assert server_field.value.violations[0].field == "message.parts[0].data.payload.model"
        assert await store.read_events(task.id, 0) == before
        # A follower hears of the change when it happens, as a task snapshot in its stream.
        following = await engine.subscribe(task.id, BOB)
        first = await anext(following)
        assert first is not None and first.response.task is not msgspec.UNSET
        items = await collect(
            await engine.send_streaming_message(
                send_request([task_envelope({"participants": people})], task.id), carol
            )
        )
        expected = [(p["id"], p["role"]) for p in people]
        opened = items[0].response.task
        assert [(p["id"], p["role"]) for p in opened.metadata[TASK_KEY]["participants"]] == expected
        # (the task's log replayed after the Task, then the change, live)
        seen = await anext(following)
        while seen is None or seen.response.task is msgspec.UNSET or seen.seq <= first.seq:
            seen = await anext(following)
        snapshot = seen.response.task.metadata[TASK_KEY]
        assert [(p["id"], p["role"]) for p in snapshot["participants"]] == expected
        await following.aclose()
        # Bob may now complete.
        done = await send(engine, BOB, control(), task.id)
        assert done.status.state is TaskState.COMPLETED
    finally:
        await engine.stop()


async def test_malformed_envelopes_are_invalid_params_naming_the_field(
    store: MemoryStore,
) -> None:
    engine = await engine_with(store, conversation_agent(echo_turn))
    try:
        task = await send(engine, ALICE, brief({"alice": "admin"}))
        cases = {
            "message.parts[0].data.kind": {"kind": "shout"},
            "message.parts[0].data.action": {"kind": "control", "action": "restart"},
            "message.parts[0].data.payload": {
                "kind": "control",
                "action": "complete",
                "payload": {},
            },
            "message.parts[0].data.extra": {"kind": "control", "action": "complete", "extra": 1},
            "message.parts[0].data.payload.participants[0].role": {
                "kind": "task",
                "payload": {"participants": [{"id": "z", "kind": "human", "role": "boss"}]},
            },
        }
        for field, data in cases.items():
            for target in ("", task.id):
                sent = data
                if target == "" and field.endswith(".role"):  # (a new task's brief is whole)
                    sent = {**data, "payload": {**data["payload"], "name": "x", "goal": "y"}}
                with pytest.raises(A2AError) as refused:
                    await send(
                        engine, ALICE, [Part(data=sent, media_type=EVENT_MEDIA_TYPE)], target
                    )
                assert refused.value.kind is ErrorKind.INVALID_PARAMS, field
                assert refused.value.violations[0].field == field
        with pytest.raises(A2AError) as new_control:
            await send(engine, ALICE, control())
        assert new_control.value.kind is ErrorKind.UNSUPPORTED_OPERATION
    finally:
        await engine.stop()


async def test_who_sends_is_asserted_once_and_never_forged(store: MemoryStore) -> None:
    engine = await engine_with(store, conversation_agent(echo_turn))
    try:
        by_metadata = await engine.send_message(
            send_request("hi", metadata={"participant_id": "dora"}), NOBODY
        )
        assert isinstance(by_metadata, Task)
        assert status_text(by_metadata) == "dora: hi"
        with pytest.raises(A2AError) as nobody:
            await engine.send_message(send_request("hi"), NOBODY)
        assert nobody.value.kind is ErrorKind.INVALID_PARAMS
        assert "no participant asserted" in nobody.value.message
        with pytest.raises(A2AError) as mismatch:
            await engine.send_message(
                send_request("hi", metadata={"participant_id": "dora"}), ALICE
            )
        assert "different participant" in mismatch.value.message
        # Authenticated, the principal is the participant; another asserted id is refused.
        principal = Caller(identity="erin", authenticated=True)
        task = await send(engine, principal, "hi")
        assert task.metadata[TASK_KEY]["participants"][0]["id"] == "erin"
        with pytest.raises(A2AError) as forged:
            await send(engine, Caller(identity="erin", authenticated=True, participant="x"), "hi")
        assert forged.value.kind is ErrorKind.PERMISSION_DENIED
        # A client's metadata cannot plant a task extension (it would make itself admin).
        planting = msgspec.structs.replace(
            send_request("hi"), metadata={TASK_KEY: {"name": "x", "goal": "y"}, "mine": 1}
        )
        planted = await engine.send_message(planting, ALICE)
        assert isinstance(planted, Task)
        assert planted.metadata["mine"] == 1
        assert planted.metadata[TASK_KEY]["name"] == "hi"
    finally:
        await engine.stop()


async def test_a_brief_alone_opens_a_task_that_waits_for_its_first_message(
    store: MemoryStore,
) -> None:
    calls: list[str] = []

    async def turn(conversation: Conversation) -> str:
        calls.append(conversation.text)
        return "ok"

    engine = await engine_with(store, conversation_agent(turn))
    try:
        payload = {"name": "n", "goal": "g"}
        task = await send(engine, ALICE, [task_envelope(payload)])
        assert task.status.state is TaskState.INPUT_REQUIRED
        assert task.metadata[STATUS_KEY] == {"sub_state": "awaiting-next-message"}
        assert calls == []
        await send(engine, ALICE, "now", task.id)
        assert calls == ["now"]
    finally:
        await engine.stop()


async def test_messages_that_arrive_mid_turn_join_it(store: MemoryStore) -> None:
    release = asyncio.Event()
    seen: list[list[str]] = []

    async def turn(conversation: Conversation) -> str:
        seen.append([e.text for e in conversation.entries if e.role == "user"])
        if len(seen) == 2:
            await release.wait()
        return f"answer {len(seen)}"

    engine = await engine_with(store, conversation_agent(turn))
    try:
        task = await send(engine, ALICE, "one")
        first = asyncio.ensure_future(send(engine, ALICE, "two", task.id))
        await until(lambda: len(seen) == 2, "the second turn")
        second = asyncio.ensure_future(send(engine, ALICE, "three", task.id))
        await until(lambda: last_said(engine, task.id, "three"), "the third message stored")
        release.set()
        ended = await asyncio.wait_for(asyncio.gather(first, second), 5)
        # Both requests end with the turn that answered both messages.
        assert [status_text(t) for t in ended] == ["answer 3", "answer 3"]
        assert seen[-1] == ["one", "two", "three"]
        history = (await engine.get_task(task.id, ALICE)).history
        assert [m.text() for m in history if m.role is Role.AGENT] == [
            "answer 1",
            "answer 2",
            "answer 3",
        ]
    finally:
        await engine.stop()


class ParkingHeldStore(MemoryStore):
    """Holds the write that parks a turn, once armed, after it is stored and before the
    turn hears it is: the moment a turn takes no more messages."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    async def append(
        self, record: TaskRecord, events: Sequence[Event], *args: Any, **kw: Any
    ) -> None:
        await super().append(record, events, *args, **kw)
        # (on one node a continued turn's one append holds its message, WORKING and parking)
        parks = any(
            isinstance(e.body, TaskStatusUpdateEvent | Task)
            and e.body.status.state is TaskState.INPUT_REQUIRED
            for e in events
        )
        if self.armed and parks:
            self.armed = False
            self.held.set()
            await self.release.wait()


async def test_a_message_that_comes_while_a_turn_parks_gets_a_turn_of_its_own() -> None:
    store = ParkingHeldStore()
    seen: list[list[str]] = []

    async def turn(conversation: Conversation) -> str:
        seen.append([e.text for e in conversation.entries if e.role == "user"])
        return f"answer {len(seen)}"

    engine = await engine_with(store, conversation_agent(turn))
    try:
        task = await send(engine, ALICE, "one")
        store.armed = True
        second = asyncio.ensure_future(send(engine, ALICE, "two", task.id))
        await asyncio.wait_for(store.held.wait(), 5)  # turn 2 is parking
        third = asyncio.ensure_future(send(engine, ALICE, "three", task.id))
        await until(lambda: last_said(engine, task.id, "three"), "the third message stored")
        store.release.set()
        ended = await asyncio.wait_for(asyncio.gather(second, third), 5)
        assert status_text(ended[0]) == "answer 2"
        assert status_text(ended[1]) == "answer 3"  # not left unanswered
        assert seen[-1] == ["one", "two", "three"]
        parked = await engine.get_task(task.id, ALICE)
        assert parked.status.state is TaskState.INPUT_REQUIRED
        assert status_text(parked) == "answer 3"
    finally:
        await engine.stop()


async def test_the_scripted_model_answers_in_order_across_turns(
    store: MemoryStore, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "first"}, {"text": "second", "tool_calls": []}]))
    agent = HarnessAgent(HarnessSettings(model=f"scripted:{script}"))
    agent.check_models()
    engine = await engine_with(store, agent)
    try:
        task = await send(engine, ALICE, "a")
        answers = [status_text(task)]
        for text in ("b", "c"):
            answers.append(status_text(await send(engine, ALICE, text, task.id)))
        assert answers == ["first", "second", "(script exhausted)"]
    finally:
        await engine.stop()
    # A new engine on the same store goes on where the task stopped.
    script.write_text(json.dumps([{"text": "1"}, {"text": "2"}, {"text": "3"}, {"text": "4"}]))
    agent = HarnessAgent(HarnessSettings(model=f"scripted:{script}"))
    engine = await engine_with(store, agent)
    try:
        assert status_text(await send(engine, ALICE, "d", task.id)) == "4"
    finally:
        await engine.stop()


async def test_the_conversation_example_serves_as_documented(store: MemoryStore) -> None:
    from examples.conversation import agent

    engine = await engine_with(store, agent)
    try:
        task = await send(engine, ALICE, "hello")
        assert status_text(task) == "alice, message 1 of this conversation: 'hello'"
        again = await send(engine, ALICE, "again", task.id)
        assert status_text(again) == "alice, message 2 of this conversation: 'again'"
        with pytest.raises(A2AError) as stranger:
            await send(engine, BOB, "hi", task.id)
        assert stranger.value.kind is ErrorKind.TASK_NOT_FOUND
    finally:
        await engine.stop()


async def last_said(engine: Engine, task_id: str, text: str) -> bool:
    """Whether the task's newest message says ``text`` (a message stored joins the turn)."""
    return (await engine.get_task(task_id, ALICE)).history[-1].text() == text
