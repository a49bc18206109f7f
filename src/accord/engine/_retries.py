"""Safe retries: a request already carried out is answered with its first result instead of
being carried out again (docs/operations.md, "Safe retries").

What is a retry: a SendMessage (or SendStreamingMessage) whose message the same caller (tenant
and identity) already sent, by ``messageId`` — to the same task or as the first message of a
task — or any mutating call sent again with the same ``Idempotency-Key``, within the window.
A message with a known messageId but different content is not a retry (it is carried out,
unprotected); a different request under a known Idempotency-Key is refused.

How: the key of a message rides on the append that stores it (one transaction: a message
the store holds always has its key, and a second append with the key is refused), so two
nodes racing with the same message store one task. A retry looks first at the requests
running in this process, then at the store's request log; it then answers as the first
request would: a blocking send waits for the end of the turn that message began and returns
the task, a stream starts with the task as it is and follows that turn, a direct reply is
returned as recorded. Other calls with an Idempotency-Key (CancelTask, push-config create and
delete) record their answer once carried out.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from accord.core import Caller, RequestKey, views
from accord.engine._live import LiveTask, Run
from accord.engine._streams import StreamItem, event_ends_turn
from accord.store import DuplicateRequest, RequestLog, StoredRequest, TaskHolds
from accord.wire import (
    A2AError,
    ErrorKind,
    Message,
    SendMessageRequest,
    StreamResponse,
    Task,
    WireError,
    decode,
    encode,
    invalid_params,
    task_not_found,
)

if TYPE_CHECKING:
    from accord.engine._engine import Engine

log = logging.getLogger("accord.engine")

T = TypeVar("T")

HEADER = "Idempotency-Key"
MAX_KEY_CHARS = 255
SWEEP_INTERVAL_S = 60.0
_READ_BATCH = 256


@dataclass(frozen=True, slots=True)
class InFlight:
    """The first request runs in this process: its turn is followed as it goes."""

    live: LiveTask
    run: Run


@dataclass(frozen=True, slots=True)
class Recorded:
    """The first request was carried out (here or on another node): its task, or its answer."""

    task_id: str
    response: bytes | None = None


First = InFlight | Recorded


class _WeakRun:
    """A run and its task, held weakly; ``get()`` is None once the run finished."""

    __slots__ = ("_live", "_run")

    def __init__(self, live: LiveTask, run: Run) -> None:
        self._live = weakref.ref(live)
        self._run = weakref.ref(run)

    def holds(self, run: Run) -> bool:
        return self._run() is run

    def get(self) -> InFlight | None:
        live, run = self._live(), self._run()
        if live is None or run is None or run.finished:
            return None
        return InFlight(live, run)


def checked_key(value: str) -> str:
    """An Idempotency-Key header as given, or InvalidParams: 1 to 255 visible characters."""
    if not 0 < len(value) <= MAX_KEY_CHARS or not value.isprintable() or not value.isascii():
        raise invalid_params(
            HEADER, f"an {HEADER} is 1 to {MAX_KEY_CHARS} visible ASCII characters"
        )
    return value


def _digest(*parts: bytes) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        digest.update(part)
    return digest.digest()


def _message_key(message_id: str) -> str:
    # Message ids are the client's: a long one is kept as its digest (the key stays small).
    if len(message_id) <= MAX_KEY_CHARS:
        return "m:" + message_id
    return "m#" + hashlib.sha256(message_id.encode()).hexdigest()


class Retries:
    """The engine's retry memory: requests running here, and the store's request log."""

    def __init__(self, engine: Engine, window_ms: int, *, by_message_id: bool = True) -> None:
        self.engine = engine
        self.window_ms = window_ms
        self.by_message_id = by_message_id
        store = engine.store
        self.log: RequestLog | None = store if isinstance(store, RequestLog) else None
        # (tenant, caller, key) -> the first request's run while it runs here (a new task's
        # creation is not stored before its agent's first move). Held weakly: a run that
        # ended is let go (its handle must see it gone); the sweep drops dead entries.
        self._running: dict[tuple[str, str, str], tuple[RequestKey, _WeakRun]] = {}
        self._by_run: weakref.WeakKeyDictionary[Run, RequestKey] = weakref.WeakKeyDictionary()
        self._answering: dict[tuple[str, str, str], asyncio.Future[bytes]] = {}
        self.replayed: dict[str, int] = {}  # retries answered with a first result, by method

    # --- SendMessage ---------------------------------------------------------------------

    async def check(
        self, request: SendMessageRequest, caller: Caller, header: str = ""
    ) -> tuple[RequestKey | None, First | None]:
        """The request's key (None: not protected) and its first occurrence, if any."""
        if self.log is None:
            return None, None
        message = request.message
        if header:
            name = "k:" + checked_key(header)
        elif message.message_id and self.by_message_id:
            name = _message_key(message.message_id)
        else:
            return None, None
        key = RequestKey(
            caller.tenant,
            caller.identity,
            name,
            _digest(encode(message)),
            self.engine.clock(),
        )
        scope = (key.tenant, key.caller, key.key)
        running = self._running.get(scope)
        if running is not None:
            found = running[1].get()
            if found is not None:
                return self._matched(key, running[0], found)
        stored = await self.log.find_request(*scope)
        if stored is None:
            return key, None
        return self._matched(key, stored.key, Recorded(stored.task_id, stored.response))

    def _matched(
        self, key: RequestKey, first: RequestKey, found: First
    ) -> tuple[RequestKey | None, First | None]:
        if first.fingerprint == key.fingerprint:
            return key, found
        if key.key.startswith("k:"):
            raise invalid_params(HEADER, f"this {HEADER} was used for a different request")
        return None, None  # a messageId reused for another message: not a retry

    def running(self, key: RequestKey, live: LiveTask, run: Run) -> None:
        """The request ``key`` now runs here as ``run``."""
        self._running[(key.tenant, key.caller, key.key)] = (key, _WeakRun(live, run))
        self._by_run[run] = key

    def finished(self, run: Run) -> None:
        """``run`` ended: its request no longer runs here. Dropped now rather than by the
        sweep: a minute of requests held until then was ~5 objects each for the collector
        to walk at every full collection (docs/benchmarks.md, "Tails as the store grows")."""
        key = self._by_run.get(run)
        if key is None:
            return
        scope = (key.tenant, key.caller, key.key)
        entry = self._running.get(scope)
        if entry is not None and entry[1].holds(run):
            del self._running[scope]

    def replied(self, run: Run, reply: Message) -> None:
        """The agent answered ``run``'s message directly (no task is stored): record the
        answer, so a retry gets it too."""
        key = self._by_run.get(run)
        if key is not None and self.log is not None:
            self.engine.spawn(self._record(StoredRequest(key, "", encode(reply))))

    async def _record(self, request: StoredRequest) -> None:
        assert self.log is not None
        try:
            await self.log.put_request(request)
        except Exception as exc:  # the answer stands; only a later retry would miss it
            log.warning("recording a request's answer failed: %s", exc)

    @staticmethod
    def lost_to(live: LiveTask) -> Recorded | None:
        """A new task whose creation the store refused for a duplicate key: the first one."""
        broken = live.broken
        if isinstance(broken, DuplicateRequest):
            return Recorded(broken.task_id)
        return None

    def note(self, method: str) -> None:
        self.replayed[method] = self.replayed.get(method, 0) + 1

    async def answer(
        self,
        first: Recorded,
        request: SendMessageRequest,
        caller: Caller,
        history_length: int | None,
        immediate: bool,
    ) -> Task | Message:
        """What a blocking SendMessage retry returns: what the first one returned (the
        engine follows a first one still in flight here itself)."""
        if first.response is not None:
            return decode(first.response, Message)
        engine = self.engine
        after = await self._message_seq(first.task_id, request.message.message_id)
        with engine.bus.subscribe(first.task_id) as sub:
            while True:
                sub.clear()
                record = await engine.store.get_task(first.task_id, caller.tenant)
                if record is None:
                    raise task_not_found(first.task_id)
                if immediate or await self._turn_over(first.task_id, after):
                    return views.present(record.task, history_length)
                await sub.wait()

    def stream(
        self,
        first: Recorded,
        request: SendMessageRequest,
        caller: Caller,
        history_length: int | None,
        heartbeat: float | None,
    ) -> AsyncIterator[StreamItem | None]:
        """What a SendStreamingMessage retry streams: the first one's turn (the engine
        follows a first one still in flight here itself)."""
        return self._recorded_stream(first, request, caller, history_length, heartbeat)

    async def _recorded_stream(
        self,
        first: Recorded,
        request: SendMessageRequest,
        caller: Caller,
        history_length: int | None,
        heartbeat: float | None,
    ) -> AsyncIterator[StreamItem | None]:
        if first.response is not None:
            yield StreamItem(StreamResponse(message=decode(first.response, Message)), None)
            return
        engine = self.engine
        task_id = first.task_id
        after = await self._message_seq(task_id, request.message.message_id)
        with engine.bus.subscribe(task_id) as sub:
            record = await engine.store.get_task(task_id, caller.tenant)
            if record is None:
                raise task_not_found(task_id)
            yield StreamItem(
                StreamResponse(task=views.present(record.task, history_length)), record.seq
            )
            if await self._turn_over(task_id, after):
                return
            cursor = record.seq
            while True:
                sub.clear()
                events = await engine.store.read_events(task_id, cursor, _READ_BATCH)
                for event in events:
                    cursor = event.seq
                    if event.streamed:
                        yield StreamItem(event.stream_response(), event.seq)
                    if event_ends_turn(event):
                        return
                if events:
                    continue
                if not await self._running_anywhere(task_id):
                    return
                if not await sub.wait(heartbeat):
                    yield None

    def guarded(
        self,
        stream: AsyncIterator[StreamItem | None],
        live: LiveTask,
        request: SendMessageRequest,
        caller: Caller,
        history_length: int | None,
        heartbeat: float | None,
    ) -> AsyncIterator[StreamItem | None]:
        """``stream`` (a new task's turn), continued as the first one's when the store
        refuses the task for a duplicate key (another node stored the same message first)."""

        async def items() -> AsyncIterator[StreamItem | None]:
            try:
                async for item in stream:
                    yield item
            except A2AError:
                first = self.lost_to(live)
                if first is None:
                    raise
                async for item in self._recorded_stream(
                    first, request, caller, history_length, heartbeat
                ):
                    yield item

        return items()

    async def _message_seq(self, task_id: str, message_id: str) -> int:
        """The log position of the message with ``message_id`` (0 when not found: the
        turn is then looked for from the start)."""
        after = 0
        while events := await self.engine.store.read_events(task_id, after, _READ_BATCH):
            for event in events:
                after = event.seq
                body = event.body
                if isinstance(body, Message) and body.message_id == message_id:
                    return event.seq
                if isinstance(body, Task) and any(m.message_id == message_id for m in body.history):
                    return event.seq
        return 0

    async def _turn_over(self, task_id: str, after: int) -> bool:
        """Whether the turn the message at ``after`` began has ended: a status ending it is
        in the log, or nobody runs the task any more (an agent that returned mid-turn)."""
        cursor = after
        while events := await self.engine.store.read_events(task_id, cursor, _READ_BATCH):
            for event in events:
                cursor = event.seq
                if event_ends_turn(event):
                    return True
        return not await self._running_anywhere(task_id)

    async def _running_anywhere(self, task_id: str) -> bool:
        engine = self.engine
        if engine.running(task_id):
            return True
        holds = engine.store if isinstance(engine.store, TaskHolds) else None
        return holds is not None and await holds.task_held_elsewhere(task_id)

    # --- other calls with an Idempotency-Key -------------------------------------------------

    async def once(
        self,
        caller: Caller,
        header: str,
        method: str,
        request: Any,
        run: Callable[[], Awaitable[T]],
        answer_type: type[T],
    ) -> T:
        """``run()`` once per (caller, Idempotency-Key): a retry gets the recorded answer."""
        if not header or self.log is None:
            return await run()
        key = RequestKey(
            caller.tenant,
            caller.identity,
            "k:" + checked_key(header),
            _digest(method.encode(), b"\0", encode(request)),
            self.engine.clock(),
        )
        scope = (key.tenant, key.caller, key.key)
        pending = self._answering.get(scope)
        if pending is not None:  # the same call is being carried out here now
            return self._replayed(method, await asyncio.shield(pending), answer_type)
        stored = await self.log.find_request(*scope)
        if stored is not None:
            if stored.key.fingerprint != key.fingerprint:
                raise invalid_params(HEADER, f"this {HEADER} was used for a different request")
            return self._replayed(method, stored.response or b"{}", answer_type)
        done: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._answering[scope] = done
        try:
            result = await run()
            encoded = encode(result)
            held = await self.log.put_request(StoredRequest(key, _task_of(result), encoded))
            if held is not None and held.response is not None:  # another node was first
                encoded = held.response
                result = self._decoded(held.response, answer_type)
            done.set_result(encoded)
            return result
        except BaseException as exc:
            done.set_exception(exc)
            done.exception()  # retrieved: waiting retries see it, nobody else must
            raise
        finally:
            del self._answering[scope]

    def _replayed(self, method: str, answer: bytes, answer_type: type[T]) -> T:
        self.note(method)
        return self._decoded(answer, answer_type)

    @staticmethod
    def _decoded(answer: bytes, answer_type: type[T]) -> T:
        if answer_type is dict:
            return {}  # type: ignore[return-value]  # (an empty answer: a delete)
        try:
            return decode(answer, answer_type)
        except WireError as exc:
            raise A2AError(ErrorKind.INTERNAL, f"a recorded answer cannot be read: {exc}") from None

    # --- forgetting ----------------------------------------------------------------------------

    async def sweep_loop(self) -> None:
        """Forget requests older than the window, and runs that ended, every minute."""
        while True:
            try:
                await self.sweep()
            except Exception:
                log.exception("forgetting old requests failed")
            await asyncio.sleep(SWEEP_INTERVAL_S)

    async def sweep(self) -> int:
        for scope, (_, first) in list(self._running.items()):
            if first.get() is None:
                del self._running[scope]
        if self.log is None:
            return 0
        cutoff = self.engine.clock() - self.window_ms
        forgotten = 0
        while deleted := await self.log.delete_requests_before(cutoff, 1000):
            forgotten += deleted
            await asyncio.sleep(0)
        return forgotten


def _task_of(result: Any) -> str:
    return result.id if isinstance(result, Task) else getattr(result, "task_id", "") or ""
