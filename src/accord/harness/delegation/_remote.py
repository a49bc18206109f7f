"""Following a delegated child on another agent of the roster, from its stand-in here.

One follow per open stand-in, in a loop that survives the agent being down and this process
restarting (the follower starts one for every open stand-in it finds):

1. **hand over**: the brief goes to the agent as a SendMessage (``returnImmediately``),
   through accord's client over the binding its card prefers, with the roster's credentials
   (and the task envelope when its card lists the task extension); its id is fixed
   (``<child>:brief``), so an agent that keeps safe retries (accord does) takes it once
   however often it is sent. A refusal fails the stand-in saying why; an agent out of reach
   is tried again (``[harness.delivery]`` backoff) up to ``max_attempts`` times;
2. **pass on**: the stand-in's messages after the brief (a relayed answer, a participant's
   message) go to the remote task, each with its fixed id, in order;
3. **follow**: SubscribeToTask — resumed after a break (``Last-Event-ID``, else a fresh
   subscription the client filters) — with every status mirrored into the stand-in; an agent
   that ends the stream in an interrupted state is read again (GetTask) every
   ``poll_interval_s``; a broken connection is retried with backoff, for as long as it takes.
   With ``[harness] push_url`` set and an agent whose card offers push, a push config on the
   remote task rings our doorbell (accord.harness.delegation._doorbell) at each change: the
   follow then reads the task there (GetTask) at once, whatever it was waiting for, and
   applies it as the stream and the poll do (:meth:`RemoteFollow.apply`);
4. **end**: once the remote task ended for its parent (terminal, or a peer's conversation
   parked awaiting its next message: it is then completed there with the control envelope),
   its artifacts and final status are read and the stand-in ends as it did.

A stand-in whose parent is over cancels its remote task first (CancelTask, retried until the
agent answers), then ends itself; one ended here directly (canceled by a participant)
cancels the remote task too. A stand-in over deletes its push config there (best effort).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from accord.client import (
    A2AClientError,
    Client,
    ClientError,
    InternalError,
    ResourceExhaustedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from accord.core import lifecycle
from accord.harness._wire import (
    COMMAND_METADATA,
    EVENT_MEDIA_TYPE,
    PARTICIPANT_METADATA,
    STATUS_KEY,
    TASK_URI,
    SubState,
)
from accord.harness.channels._outbox import described
from accord.harness.core import _delegation as core
from accord.harness.core import _standin as standin
from accord.harness.core._delegation import OPEN_NAMES, Observed, Question, RemoteState
from accord.harness.core._state import extension_of
from accord.harness.core._subtasks import TERMINAL_NAMES, state_name
from accord.harness.delegation import _push_config as push_config
from accord.harness.delegation._internal import as_harness
from accord.harness.delegation._stored import StoredTask
from accord.push import backoff_s
from accord.wire import (
    UNSET,
    A2AError,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
)

if TYPE_CHECKING:
    from accord.harness.delegation._follower import Follower

log = logging.getLogger("accord.harness.delegation")


class RemoteFollow:
    def __init__(self, follower: Follower, stand_in: str, tenant: str) -> None:
        self.follower = follower
        self.stand_in = stand_in
        self.tenant = tenant
        self.stored = StoredTask(follower.engine, stand_in, tenant)
        self.task: asyncio.Task[None] | None = None
        self.failures = 0  # in a row
        self._woken = asyncio.Event()
        self._pushed = False  # the agent rang: the task there is read first thing
        self._jitter = random.random

    def start(self, done: Callable[[], object]) -> None:
        self.task = asyncio.ensure_future(self._run())
        self.task.add_done_callback(lambda _: done())

    def wake(self) -> None:
        self._woken.set()

    def ring(self) -> None:
        """The agent pushed a change of the task there: it is read (GetTask) at once."""
        self._pushed = True
        self._woken.set()

    async def _run(self) -> None:
        settings = self.follower.settings
        while True:
            try:
                if await self._step():
                    await self._forget_push()
                    return
                self.failures = 0
                continue
            except asyncio.CancelledError:
                raise
            except (ClientError, OSError, RuntimeError) as exc:
                error = described(exc)
            except Exception as exc:  # a bug: retried like any failure, and logged
                log.exception("following the remote task of %s broke", self.stand_in)
                error = f"unexpected {type(exc).__name__}"
            self.failures += 1
            delay = backoff_s(self.failures, settings.retry_base_s, settings.retry_max_s,
                              self._jitter())  # fmt: skip
            log.info("sub-task %s: %s; trying again in %.1f s", self.stand_in, error, delay)
            with contextlib.suppress(Exception):  # (noted only: the follow goes on anyway)
                await self.change(standin.unreachable(error))
            await self._sleep(delay)

    async def _sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less when woken."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._woken.wait()
        self._woken.clear()

    # --- one pass ---------------------------------------------------------------------------

    async def _step(self) -> bool:
        """One pass of the follow; True once it is over."""
        stand_in = await self._read(self.stand_in)
        info = core.info_of(stand_in) if stand_in is not None else None
        if stand_in is None or info is None or info.remote is None:
            return True
        remote = info.remote
        parent_id = core.parent_of(stand_in)
        parent = await self._read(parent_id) if parent_id is not None else None
        roster = self.follower.roster
        reachable = roster.get(remote.agent) is not None  # (the roster changed: it is not)
        open_there = reachable and bool(remote.task_id) and remote.state in OPEN_NAMES
        if _ended(stand_in):  # ended here: the remote task does not live on
            if open_there:
                await self._cancel(remote)
            return True
        if core.orphaned(parent, stand_in):
            if open_there:
                await self._cancel(remote)
            caller = as_harness(self.follower.agent_id, self.tenant)
            with contextlib.suppress(A2AError):
                await self.follower.engine.cancel_task(self.stand_in, caller, guard=False)
            return True
        if not reachable:
            await self._end(remote, "FAILED", f"{remote.agent!r} is no longer on the agent roster")
            return True
        if not remote.task_id:
            return await self._hand_over(stand_in, remote)
        async with roster.connect(remote.agent) as client:
            await push_config.register(self, client, remote, self.follower.push_url)
            if self._pushed:
                self._pushed = False
                await self.apply(await client.get_task(remote.task_id))
                stand_in = await self._read(self.stand_in) or stand_in
            remote = await self._pass_on(client, stand_in, await self.remote_now() or remote)
            return await self._follow(client, remote)

    # --- 1. the brief -------------------------------------------------------------------------

    async def _hand_over(self, stand_in: Task, remote: RemoteState) -> bool:
        brief = stand_in.history[0]
        settings = self.follower.settings
        try:
            async with self.follower.roster.connect(remote.agent) as client:
                parts = list(brief.parts)
                if _speaks_task_extension(client):
                    payload = core.Brief(*_brief_fields(stand_in, brief.text())).envelope()
                    envelope = {"kind": "task", "payload": payload}
                    parts.append(Part(data=envelope, media_type=EVENT_MEDIA_TYPE))
                message = self._outgoing(brief.message_id, parts, remote.agent)
                answer = await client.send(message, return_immediately=True)
        except A2AClientError as exc:
            if isinstance(exc, InternalError | ResourceExhaustedError):
                raise
            await self._end(remote, "FAILED", f"{remote.agent} refused the sub-task: {exc}")
            return True
        except (ClientError, OSError, RuntimeError) as exc:
            if self.failures + 1 >= settings.max_attempts:
                text = f"{remote.agent} could not be reached ({described(exc)})"
                await self._end(remote, "FAILED", text)
                return True
            raise
        if isinstance(answer, Message):  # the agent answered without a task
            await self._end(remote, "COMPLETED", answer.text())
            return True
        seen = _observed(answer.status, answer.metadata)
        await self._mirror(seen, answer.id)
        return False

    # --- 2. passing messages on ---------------------------------------------------------------

    async def _pass_on(self, client: Client, stand_in: Task, remote: RemoteState) -> RemoteState:
        if remote.state not in OPEN_NAMES:
            return remote
        for index in range(remote.forwarded, len(stand_in.history)):
            message = stand_in.history[index]
            metadata = message.metadata if isinstance(message.metadata, dict) else {}
            if message.role is Role.USER and COMMAND_METADATA not in metadata:
                parts = [part for part in message.parts if part.media_type != EVENT_MEDIA_TYPE]
                outgoing = self._outgoing(
                    f"{self.stand_in}:{index}", parts, remote.agent, remote.task_id
                )
                await client.send(outgoing, return_immediately=True)
            await self.change(standin.passed_on(index + 1))
        return await self.remote_now() or remote

    # --- 3. following ---------------------------------------------------------------------------

    async def _follow(self, client: Client, remote: RemoteState) -> bool:
        if core.meaning("delegated", Observed(remote.state, remote.sub_state)) == "ended":
            await self._finish(client, remote)
            return True
        watching = asyncio.ensure_future(self._watch(client, remote))
        woken = asyncio.ensure_future(self._woken.wait())
        try:
            await asyncio.wait({watching, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            woken.cancel()
            if not watching.done():
                watching.cancel()
            await asyncio.gather(watching, woken, return_exceptions=True)
        if not watching.done() or watching.cancelled():
            self._woken.clear()
            return False  # woken: a message to pass on, a parent over … (the next pass)
        seen = watching.result()
        if core.meaning("delegated", seen) == "ended":
            await self._finish(client, remote)
            return True
        # The agent ended the stream in an interrupted state: it is read again in a while.
        await self._sleep(self.follower.settings.poll_interval_s)
        if not self._pushed:  # (a push: the next pass reads it)
            await self.apply(await client.get_task(remote.task_id))
        return False

    async def _watch(self, client: Client, remote: RemoteState) -> Observed:
        """Mirror every status of the remote task until the stream ends (or the task ended
        for its parent); the last one seen."""
        seen = Observed(remote.state, remote.sub_state, remote.question)
        try:
            async for event in client.subscribe(remote.task_id):
                status = _status_of(event)
                if status is None:
                    continue
                seen = _observed(*status)
                await self._mirror(seen)
                if core.meaning("delegated", seen) == "ended":
                    return seen
        except UnsupportedOperationError:  # (a task over cannot be subscribed to: read it)
            seen = await self.apply(await client.get_task(remote.task_id))
        return seen

    # --- 4. the end ------------------------------------------------------------------------------

    async def _finish(self, client: Client, remote: RemoteState) -> None:
        try:
            task = await client.get_task(remote.task_id)
        except TaskNotFoundError:
            await self._end(remote, "FAILED", f"{remote.agent} no longer knows the task")
            return
        seen = _observed(task.status, task.metadata)
        if (
            seen.sub_state == SubState.AWAITING_NEXT_MESSAGE.value
            and seen.state not in TERMINAL_NAMES
        ):
            await self._complete_there(client, remote)
        message = task.status.message
        text = message.text() if isinstance(message, Message) else ""
        artifacts = tuple(task.artifacts)
        final = RemoteState(agent=remote.agent, task_id=remote.task_id, state=seen.state,
                            sub_state=seen.sub_state)  # fmt: skip
        await self.stored.decide(
            lambda rec, now: standin.finished(rec, now, final, text, artifacts)
        )

    async def _complete_there(self, client: Client, remote: RemoteState) -> None:
        """A peer's conversation that answered is completed there (it would live on)."""
        control = Part(data={"kind": "control", "action": "complete"}, media_type=EVENT_MEDIA_TYPE)
        message = self._outgoing(
            f"{self.stand_in}:complete", [control], remote.agent, remote.task_id
        )
        try:
            await client.send(message, return_immediately=True)
        except A2AClientError as exc:  # (the child ended otherwise there: nothing to do)
            log.info("sub-task %s not completed on %s: %s", self.stand_in, remote.agent, exc)

    async def _cancel(self, remote: RemoteState) -> None:
        async with self.follower.roster.connect(remote.agent) as client:
            with contextlib.suppress(TaskNotCancelableError, TaskNotFoundError):
                await client.cancel(remote.task_id)  # (refused: it ended there already)
        await self.change(standin.seen("CANCELED", None, None))

    async def _end(self, remote: RemoteState, state: str, text: str) -> None:
        final = RemoteState(agent=remote.agent, task_id=remote.task_id, state=state)
        await self.stored.decide(lambda rec, now: standin.finished(rec, now, final, text))

    async def _forget_push(self) -> None:
        """The stand-in is over: its push config there is deleted (best effort)."""
        remote = await self.remote_now()
        if remote is not None:
            await push_config.unregister(self.follower.roster, self.stand_in, remote)

    # --- the parts ---------------------------------------------------------------------------

    async def apply(self, task: Task) -> Observed:
        """The remote task as read (GetTask: a poll, a push, a stream that cannot be had),
        mirrored into the stand-in; what was seen."""
        seen = _observed(task.status, task.metadata)
        await self._mirror(seen)
        return seen

    async def remote_now(self) -> RemoteState | None:
        """The remote task as the stand-in records it now (None: no stand-in any more)."""
        current = await self._read(self.stand_in)
        info = core.info_of(current) if current is not None else None
        return info.remote if info is not None else None

    async def _mirror(self, seen: Observed, task_id: str = "") -> None:
        await self.change(standin.seen(seen.state, seen.sub_state, seen.question, task_id))

    async def change(self, change: standin.Change) -> None:
        await self.stored.decide(partial(standin.mirrored, change=change))

    async def _read(self, task_id: str) -> Task | None:
        record = await self.follower.engine.read_task(task_id, self.tenant)
        return record.task if record is not None else None

    def _outgoing(
        self, message_id: str, parts: list[Part], agent: str, task_id: str = ""
    ) -> Message:
        """A message to ``agent``; without credentials for it, naming the harness as the
        participant it comes from (as tiny-harness servers in open mode read it)."""
        metadata: dict[str, object] = {}
        entry = self.follower.roster.get(agent)
        if entry is not None and entry.credentials.kind == "none":
            metadata[PARTICIPANT_METADATA] = self.follower.agent_id
        return Message(
            message_id=message_id, role=Role.USER, parts=parts, metadata=metadata, task_id=task_id
        )


def _ended(task: Task) -> bool:
    state = task.status.state
    return isinstance(state, TaskState) and lifecycle.is_terminal(state)


def _speaks_task_extension(client: Client) -> bool:
    return any(e.uri == TASK_URI for e in client.card.capabilities.extensions)


def _brief_fields(stand_in: Task, text: str) -> tuple[str, str, str, tuple[str, ...]]:
    extension = extension_of(stand_in)
    if extension is None:
        return ("sub-task", text, "", ())
    criteria = tuple(c.text for c in extension.acceptance_criteria)
    return (extension.name, extension.goal, extension.description, criteria)


def _status_of(event: StreamResponse) -> tuple[TaskStatus, object] | None:
    if isinstance(event.task, Task):
        return event.task.status, event.task.metadata
    update = event.status_update
    if update is not UNSET and update is not None:
        return update.status, update.metadata
    return None


def _observed(status: TaskStatus, metadata: object) -> Observed:
    """The remote task's state as its parent reads it: with the status extension's sub-state
    (an accord or tiny-harness peer says why it waits) and, when it asks, its question."""
    state = state_name(status.state)
    sub_state = None
    if isinstance(metadata, dict):
        value = metadata.get(STATUS_KEY)
        if isinstance(value, dict) and isinstance(value.get("sub_state"), str):
            sub_state = value["sub_state"]
    question = None
    message = status.message
    if core.meaning("delegated", Observed(state, sub_state)) == "asking":
        if isinstance(message, Message):
            question = Question(id=message.message_id, text=message.text() or "(no text)")
        else:
            question = Question(id=f"{state}:{status.timestamp}", text="(no question given)")
    return Observed(state, sub_state, question)
