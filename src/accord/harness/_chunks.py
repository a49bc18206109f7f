"""A streaming model's text as chunks of an artifact, as many as the store keeps up with.

The model's stream is read in a task of its own while the turn writes. While no chunk of the
answer is on its way to the store, text goes out as it comes: each piece an ``append`` chunk
(``TaskHandle.update_artifact``). While one is (until it is durable, and its event has gone to
the task's streams), the text that comes meanwhile is gathered, and goes out as the next
single chunk. Under light load each token is still a chunk of its own, written as soon as it
comes; under load many share one append, one commit and one event, so a node keeps up with
more streams instead of falling behind them.

When the node is loaded the writer holds back a little longer: a chunk whose round trip (its
append handed to the engine until it is durable and its event has gone out) took at least
``Pacing.loaded`` is followed by a pause as long again (at most ``Pacing.max_hold``) before the
next chunk, so that about twice the tokens share each chunk, each chunk's append, snapshot,
commit and stream event. Under light load a round trip is far shorter than that and nothing
is held; the pause ends early when the model's stream ends, so a turn ends no later.

The newest character is held back until more comes, so that the last chunk carries text and
says it is the last (``lastChunk``): no chunk is ever an empty text part. The chunks, joined,
are the model's text as it wrote it, in order.

A failure of the model's stream is raised once the text that came before it is written (the
held character aside, as a chunk-by-chunk writer would leave it); a failure to write is raised
at once, and stops the reading; so does a cancellation of the turn. The reader never outlives
the call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from accord.agents import TaskHandle
from accord.harness.models import ModelEvent, ModelResponse, TextDelta


@dataclass(frozen=True, slots=True)
class Pacing:
    """When the writer pauses between chunks: after a round trip of at least ``loaded``
    seconds, for as long again, up to ``max_hold`` (``clock``: seconds, monotonic)."""

    loaded: float = 0.010
    max_hold: float = 0.05
    clock: Callable[[], float] = time.monotonic

    def hold(self, round_trip: float) -> float:
        """Seconds to pause before the next chunk, after one whose round trip took
        ``round_trip`` seconds."""
        return min(round_trip, self.max_hold) if round_trip >= self.loaded else 0.0


PACING = Pacing()


class _Reader:
    """Reads a model's stream: the text not yet taken, and the response at its end."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.response: ModelResponse | None = None
        self.came = asyncio.Event()  # text came (or the stream ended) since the last take
        self.over = False  # the stream ended (or failed)
        self._pause: asyncio.Future[None] | None = None

    async def read(self, stream: AsyncIterator[ModelEvent]) -> None:
        try:
            async for event in stream:
                if isinstance(event, TextDelta):
                    if event.text:
                        self.pieces.append(event.text)
                        self.came.set()
                else:
                    self.response = event
        finally:
            self.over = True
            self.came.set()  # (the writer learns of the end, or of the failure)
            pause = self._pause
            if pause is not None and not pause.done():
                pause.set_result(None)  # (what is left goes out at once)

    async def pause(self, seconds: float) -> None:
        """Wait ``seconds``, or until the stream ends if it ends sooner."""
        if self.over:
            return
        loop = asyncio.get_running_loop()
        waiter = self._pause = loop.create_future()
        timer = loop.call_later(seconds, _wake, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._pause = None

    def take(self) -> str:
        text = "".join(self.pieces)
        self.pieces.clear()
        self.came.clear()
        return text


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def stream_chunks(
    task: TaskHandle, stream: AsyncIterator[ModelEvent], artifact_id: str, name: str
) -> ModelResponse:
    """The model's response at the end of ``stream``; its text written on the way as chunks
    of the artifact ``artifact_id`` (named ``name``), coalesced while one is being written
    (and, when the node is loaded, for as long again after it: ``PACING``)."""
    pacing = PACING
    clock = pacing.clock
    reader = _Reader()
    reading = asyncio.create_task(reader.read(stream))
    try:
        held = ""
        streamed = False  # (the first chunk opens the artifact; the others append to it)
        while True:
            await reader.came.wait()
            ended = reading.done()  # (nothing comes after this take, then)
            held += reader.take()
            if len(held) > 1:
                out, held = held[:-1], held[-1]
                sent = clock()
                await task.update_artifact(
                    text=out, artifact_id=artifact_id, name=name, append=streamed
                )
                streamed = True
                if not ended:
                    await task.flush()  # what comes meanwhile goes in the next chunk
                    hold = pacing.hold(clock() - sent)
                    if hold > 0.0:
                        await reader.pause(hold)  # (loaded: and what comes in as long again)
            if ended:
                break
        failure = reading.exception()
        if failure is not None:
            raise failure
        if held:
            await task.update_artifact(
                text=held, artifact_id=artifact_id, name=name, append=streamed, last_chunk=True
            )
        assert reader.response is not None, "a model stream ends with its response"
        return reader.response
    finally:
        if not reading.done():  # (a write failed, or the turn was cancelled)
            reading.cancel()
            await asyncio.wait((reading,))
        if reading.done() and not reading.cancelled():
            reading.exception()  # (retrieved: it is raised above, or a failure outranks it)
