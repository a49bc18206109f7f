"""A streamed answer's text reaches the store and the task's streams in as many chunks as the
store keeps up with: each token a chunk of its own while writes keep up, the tokens that come
while a chunk is being written gathered into the next one; the chunks, joined, are the
model's text in order, the last one says it is the last. A model that fails mid-way still
parks the turn saying so, and a cancel mid-way stops the model's stream. When a chunk's round
trip was slow (a loaded node), the next one waits as long again, gathering more, and no longer
than the model's stream.

The store is a real one whose appends of artifact chunks wait, while ``gate`` is shut, until
it opens (a store slower than the model); the models are scripted streams."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from tests.harness.engine_kit import ALICE, request, said, serving
from tests.waiting import until

from accord.engine import Engine, StreamItem
from accord.harness import Conversation, HarnessAgent, HarnessSettings, _chunks
from accord.harness._chunks import Pacing
from accord.harness._wire import STATUS_KEY
from accord.harness.models import ModelError, ModelEvent, ModelResponse, TextDelta
from accord.store import TaskStore
from accord.store._memory import MemoryStore
from accord.store._sqlite import SqliteStore
from accord.wire._model import Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent

pytestmark = pytest.mark.unit


class SlowStore(MemoryStore):
    """A MemoryStore that takes appends one at a time, in order, and whose appends carrying
    an artifact chunk wait for ``gate`` (open at first); ``waiting``: such an append is
    waiting at it."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.waiting = asyncio.Event()
        self.order = asyncio.Lock()  # (first come, first served)

    async def append(self, record: Any, events: Any, *args: Any, **kwargs: Any) -> None:
        async with self.order:
            if any(e.kind == "artifact" for e in events) and not self.gate.is_set():
                self.waiting.set()
                await self.gate.wait()
            await super().append(record, events, *args, **kwargs)

    async def chunks(self, task_id: str) -> list[TaskArtifactUpdateEvent]:
        events = await self.read_events(task_id, 0)
        return [e.body for e in events if isinstance(e.body, TaskArtifactUpdateEvent)]


class Dribble:
    """A streaming model that writes ``first``; then, once the store holds its first chunk
    back, ``rest``, a piece a loop turn; then answers, or raises ``failure``."""

    def __init__(
        self, store: SlowStore, first: str, rest: list[str], failure: Exception | None = None
    ) -> None:
        self.store = store
        self.first = first
        self.rest = rest
        self.failure = failure
        self.written = asyncio.Event()  # every piece was given

    async def respond(self, conversation: Conversation) -> ModelResponse:
        raise AssertionError("a streaming model is streamed")

    async def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        yield TextDelta(self.first)
        await self.store.waiting.wait()
        for piece in self.rest:
            yield TextDelta(piece)
            await asyncio.sleep(0)  # (each piece in a loop turn of its own)
        self.written.set()
        if self.failure is not None:
            raise self.failure
        yield ModelResponse(self.first + "".join(self.rest))


def engine_of(store: TaskStore, model: object) -> AbstractAsyncContextManager[Engine]:
    agent = HarnessAgent(HarnessSettings(model="main"), {"main": model})  # type: ignore[dict-item]
    return serving(agent, store)


async def streamed(engine: Engine, text: str) -> list[StreamItem]:
    items = await engine.send_streaming_message(request(text), ALICE)
    return [item async for item in items if item is not None]


def updates(items: list[StreamItem]) -> Iterator[TaskArtifactUpdateEvent]:
    for item in items:
        update = item.response.artifact_update
        if isinstance(update, TaskArtifactUpdateEvent):
            yield update


def text_of(update: TaskArtifactUpdateEvent) -> str:
    return "".join(part.text or "" for part in update.artifact.parts)


def task_of(items: list[StreamItem]) -> str:
    """The id of the task a turn's stream is of (its first item)."""
    first = items[0].response.task
    assert isinstance(first, Task)
    return first.id


PIECES = [f" w{i}" for i in range(40)]
TEXT = "Hello" + "".join(PIECES)


async def slow_turn(
    store: SlowStore, model: Dribble
) -> tuple[list[StreamItem], list[TaskArtifactUpdateEvent], Task]:
    """A turn of ``model`` whose first chunk the store holds back until the model has written
    every piece: its stream, the chunks stored, the task as it ended."""
    async with engine_of(store, model) as engine:
        store.gate.clear()
        turn = asyncio.ensure_future(streamed(engine, "hi"))
        await asyncio.wait_for(model.written.wait(), 30)
        store.gate.set()
        items = await asyncio.wait_for(turn, 30)
        task_id = task_of(items)
        stored = await engine.store.get_task(task_id, None)
        assert stored is not None
        return items, await store.chunks(task_id), stored.task


async def test_tokens_that_come_while_a_chunk_is_written_go_out_as_one_chunk() -> None:
    store = SlowStore()
    model = Dribble(store, "Hello", PIECES)
    items, chunks, task = await slow_turn(store, model)
    # 41 pieces, 3 writes: the first piece (its newest character held back), all that came
    # while it was written, and the held character, saying it is the last.
    assert [text_of(c) for c in chunks] == ["Hell", TEXT[4:-1], TEXT[-1]]
    assert [c.append for c in chunks] == [False, True, True]
    assert [c.last_chunk for c in chunks] == [False, False, True]
    # The task's stream carried the same chunks, in order; the artifact reads as the text.
    seen = list(updates(items))
    assert [text_of(u) for u in seen] == [text_of(c) for c in chunks]
    assert [u.last_chunk for u in seen] == [False, False, True]
    [reply] = task.artifacts
    assert "".join(p.text or "" for p in reply.parts) == TEXT
    assert reply.name == "reply"
    assert task.status.state is TaskState.INPUT_REQUIRED
    assert said(task) == TEXT


class Burst:
    """A streaming model that writes all its pieces at once (they were in one read)."""

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces

    async def respond(self, conversation: Conversation) -> ModelResponse:
        raise AssertionError("a streaming model is streamed")

    async def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        for piece in self.pieces:
            yield TextDelta(piece)
        yield ModelResponse("".join(self.pieces))


async def test_pieces_that_come_together_are_one_chunk_on_sqlite(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db")
    pieces = ["Hello", *PIECES]
    async with engine_of(store, Burst(pieces)) as engine:
        items = await asyncio.wait_for(streamed(engine, "hi"), 30)
        events = await store.read_events(task_of(items), 0)
    chunks = [e.body for e in events if isinstance(e.body, TaskArtifactUpdateEvent)]
    # (the held character goes as the last chunk of its own)
    assert [text_of(c) for c in chunks] == [TEXT[:-1], TEXT[-1]]
    assert [text_of(u) for u in updates(items)] == [TEXT[:-1], TEXT[-1]]
    assert [c.last_chunk for c in chunks] == [False, True]


class Paced:
    """A streaming model that writes each piece only once the store holds a chunk for each
    piece before it (a store that keeps up with it)."""

    def __init__(self, store: MemoryStore, pieces: list[str]) -> None:
        self.store = store
        self.pieces = pieces
        self.task_id = ""

    async def respond(self, conversation: Conversation) -> ModelResponse:
        raise AssertionError("a streaming model is streamed")

    async def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        for number, piece in enumerate(self.pieces):

            async def stored(count: int = number) -> bool:
                events = await self.store.read_events(conversation.task_id, 0)
                return sum(e.kind == "artifact" for e in events) >= count

            await until(stored, f"chunk {number} in the store")
            yield TextDelta(piece)
        yield ModelResponse("".join(self.pieces))


async def test_while_writes_keep_up_each_token_is_a_chunk_as_it_comes() -> None:
    store = SlowStore()
    pieces = ["Two ", "days ", "in ", "June."]
    async with engine_of(store, Paced(store, pieces)) as engine:
        items = await asyncio.wait_for(streamed(engine, "when?"), 30)
    seen = list(updates(items))
    assert [text_of(u) for u in seen] == ["Two", " days", " in", " June", "."]
    assert [u.last_chunk for u in seen] == [False] * 4 + [True]


async def test_a_model_failing_mid_stream_while_a_chunk_is_written_parks_the_turn() -> None:
    store = SlowStore()
    down = ModelError(
        "model main: connection reset",
        reason="model_unavailable",
        model="openai:main",
        detail="connection reset",
    )
    model = Dribble(store, "Hello", PIECES, failure=down)
    _, chunks, task = await slow_turn(store, model)
    assert task.status.state is TaskState.INPUT_REQUIRED
    assert task.metadata[STATUS_KEY]["reason"] == "model_unavailable"
    assert "connection reset" in said(task)
    # What came before the failure was written (its newest character aside); no chunk says
    # it is the last.
    assert "".join(text_of(c) for c in chunks) == TEXT[:-1]
    assert not any(c.last_chunk for c in chunks)


class Endless:
    """A streaming model that writes a piece, then waits for ever; ``closed``: its stream
    was stopped."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()
        self.wrote = asyncio.Event()

    async def respond(self, conversation: Conversation) -> ModelResponse:
        raise AssertionError("a streaming model is streamed")

    async def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        try:
            yield TextDelta("Thinking about it")
            self.wrote.set()
            await asyncio.Event().wait()
            yield ModelResponse("never")
        finally:
            self.closed.set()


async def test_a_cancel_mid_stream_stops_the_models_stream() -> None:
    store = SlowStore()
    model = Endless()
    async with engine_of(store, model) as engine:
        items = await engine.send_streaming_message(request("hi"), ALICE)
        seen: list[StreamItem] = []
        async for item in items:  # (up to the first chunk)
            if item is not None:
                seen.append(item)
            if any(updates(seen)):
                break
        canceled = await engine.cancel_task(task_of(seen), ALICE)
        assert canceled.status.state is TaskState.CANCELED
        await asyncio.wait_for(model.closed.wait(), 30)  # the model's stream was stopped
        rest = [item async for item in items if item is not None]
    assert [text_of(u) for u in updates(seen)] == ["Thinking about i"]
    assert not any(updates(rest))
    ended = rest[-1].response.status_update
    assert isinstance(ended, TaskStatusUpdateEvent)
    assert ended.status.state is TaskState.CANCELED


# --- a loaded node: a slow round trip holds the next chunk as long again ------------------------


def test_a_pause_follows_only_a_slow_round_trip_as_long_again_up_to_a_bound() -> None:
    pacing = Pacing(loaded=0.010, max_hold=0.05)
    assert pacing.hold(0.0) == 0.0
    assert pacing.hold(0.009) == 0.0  # (light load: the next chunk goes as soon as text is there)
    assert pacing.hold(0.010) == 0.010
    assert pacing.hold(0.030) == 0.030
    assert pacing.hold(0.2) == 0.05


class SlowClock(SlowStore):
    """A SlowStore whose every artifact chunk takes an hour by ``clock`` (a round trip far
    past any bound); ``chunked``: it holds the first chunk."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.chunked = asyncio.Event()

    def clock(self) -> float:
        return self.now

    async def append(self, record: Any, events: Any, *args: Any, **kwargs: Any) -> None:
        await super().append(record, events, *args, **kwargs)
        if any(e.kind == "artifact" for e in events):
            self.now += 3600.0
            self.chunked.set()


class AfterFirstChunk:
    """A streaming model that writes ``first``, then, once the store holds a chunk, ``rest``
    a piece a loop turn, then answers."""

    def __init__(self, store: SlowClock, first: str, rest: list[str]) -> None:
        self.store = store
        self.first = first
        self.rest = rest

    async def respond(self, conversation: Conversation) -> ModelResponse:
        raise AssertionError("a streaming model is streamed")

    async def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        yield TextDelta(self.first)
        await self.store.chunked.wait()
        for piece in self.rest:
            yield TextDelta(piece)
            await asyncio.sleep(0)
        yield ModelResponse(self.first + "".join(self.rest))


@pytest.fixture
def slow_round_trips(monkeypatch: pytest.MonkeyPatch) -> SlowClock:
    """A store whose chunks' round trips take an hour, and the pacing that reads its clock
    (a pause of up to a day)."""
    store = SlowClock()
    monkeypatch.setattr(_chunks, "PACING", Pacing(loaded=1.0, max_hold=86400.0, clock=store.clock))
    return store


async def test_after_a_slow_round_trip_what_comes_meanwhile_goes_as_one_chunk_at_the_end(
    slow_round_trips: SlowClock,
) -> None:
    """The first chunk's round trip took an hour: the writer pauses as long, and the 40
    pieces that come one a loop turn meanwhile (each its own chunk, or a few, without the
    pause) go out as one chunk when the stream ends, which ends the pause."""
    store = slow_round_trips
    async with engine_of(store, AfterFirstChunk(store, "Hello", PIECES)) as engine:
        items = await asyncio.wait_for(streamed(engine, "hi"), 30)
        chunks = await store.chunks(task_of(items))
    assert [text_of(c) for c in chunks] == ["Hell", TEXT[4:-1], TEXT[-1]]
    assert [text_of(u) for u in updates(items)] == [text_of(c) for c in chunks]
    assert [c.last_chunk for c in chunks] == [False, False, True]


async def test_a_cancel_during_a_pause_stops_the_models_stream(slow_round_trips: SlowClock) -> None:
    store = slow_round_trips
    model = Endless()
    async with engine_of(store, model) as engine:
        items = await engine.send_streaming_message(request("hi"), ALICE)
        seen: list[StreamItem] = []
        async for item in items:  # (up to the first chunk: then the writer pauses)
            if item is not None:
                seen.append(item)
            if any(updates(seen)):
                break
        canceled = await engine.cancel_task(task_of(seen), ALICE)
        assert canceled.status.state is TaskState.CANCELED
        await asyncio.wait_for(model.closed.wait(), 30)
        rest = [item async for item in items if item is not None]
    assert [text_of(u) for u in updates(seen)] == ["Thinking about i"]
    assert not any(updates(rest))
