"""What the harness owes the participants' messages it diverted (channel messages, replies):
their handling, done exactly once even when a crash cuts it short.

A diverted message is stored marked :data:`~accord.harness.channels._judge.OWED_KEY`, in the
append that stores it. Its handling — the hooks, then one decision that relays it (naming the
agents it is delivered to), marks the help request it answers and starts its turn, or that
refuses it — leaves a trace naming the message in that same decision:

- a status message whose metadata names it: a relay or what its sender is told
  (``accord.harness/channel_note``), a refusal (``accord.harness/received``);
- or the help request it answered (``answered_by``: its id).

A message marked owed with no such trace is owed still: its handler never got to decide
(the process died meanwhile).

A participant's plain message to a parked conversation is owed its turn the same way (marked
:data:`~accord.harness.channels._judge.OWED_TURN`): its trace is any message of the agent's
after it (the turn's answer, a refusal, …), and it is owed only while the task is parked —
a task left WORKING is the engine's recovery's to resume, and its turn reads the message.

:class:`OwedScan` finds owed messages when the harness starts (once the engine's recovery
has given back the turns a crash cut) and, on a store shared by several nodes, every
``recovery_interval_s``, and runs their handlers again. A handler decides only while its
message is owed, so a message is handled once however often its handler runs (the hooks may
run again: they judge, the decision acts); a plain message's turn starts only while it is
owed and no turn runs on the task here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from accord.agents import ExecutorFunction
from accord.core import TaskRecord, lifecycle
from accord.harness._step_events import is_step
from accord.harness.channels._decisions import NOTE_KEY
from accord.harness.channels._judge import OWED_KEY, OWED_TURN
from accord.harness.channels._state import state_of
from accord.harness.core._state import RECEIVED_KEY
from accord.store import TaskHolds
from accord.wire import Message, Role, Task, TaskState

if TYPE_CHECKING:
    from accord.agents import Host

log = logging.getLogger("accord.harness.channels")

SCAN_STATES = frozenset(
    {TaskState.SUBMITTED, TaskState.WORKING, TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED}
)
SCAN_BATCH = 500


def handled(task: Task) -> set[str]:
    """The ids of the messages whose handling the task records."""
    done = {r.answered_by for r in state_of(task).requests if r.answered_by is not None}
    for message in task.history:
        marks = message.metadata
        if message.role is not Role.AGENT or not isinstance(marks, dict):
            continue
        for key, names in ((NOTE_KEY, ("relay", "told")), (RECEIVED_KEY, ("refused",))):
            note = marks.get(key)
            if isinstance(note, dict):
                done.update(v for name in names if isinstance(v := note.get(name), str))
    return done


def is_owed(message: Message) -> bool:
    marks = message.metadata
    return (
        message.role is Role.USER
        and isinstance(marks, dict)
        and (marks.get(OWED_KEY) is True or marks.get(OWED_KEY) == OWED_TURN)
    )


def owes_turn(message: Message) -> bool:
    """Whether ``message`` is a plain message marked owed its turn."""
    marks = message.metadata
    return isinstance(marks, dict) and marks.get(OWED_KEY) == OWED_TURN


def owed(task: Task) -> list[Message]:
    """The task's messages owed their handling still, oldest first."""
    marked = [message for message in task.history if is_owed(message)]
    if not marked:
        return []
    turns = [owes_turn(message) for message in marked]
    # (each looked at only when needed: a plain message is owed its turn while parked)
    done = handled(task) if not all(turns) else set()
    parked = task.status.state in lifecycle.INTERRUPTED
    waiting = unanswered(task) if parked and any(turns) else set()
    return [
        message
        for message, turn in zip(marked, turns, strict=True)
        if (message.message_id in waiting if turn else message.message_id not in done)
    ]


def unanswered(task: Task) -> set[str]:
    """The ids of the messages after the agent's newest one."""
    found: set[str] = set()
    for message in reversed(task.history):
        if message.role is Role.AGENT and not is_step(message):
            break
        found.add(message.message_id)
    return found


class OwedScan:
    """Runs the handlers of the messages a dead process stored and did not handle.

    ``handler(task, messages)`` is the run that handles ``messages`` of ``task`` in order;
    the engine runs it as it runs a diverted message's handler."""

    def __init__(
        self, engine: Host, handler: Callable[[Task, list[Message]], ExecutorFunction]
    ) -> None:
        self.engine = engine
        self.handler = handler
        self._loop: asyncio.Task[None] | None = None
        # Plain messages owed their turn at the last scan: a later scan (other nodes share
        # the store) starts one only if it was owed then too, never the turn of a message
        # another node stored a moment ago and is about to start.
        self._passes = 0
        self._sighted: set[str] = set()
        self._sighting: set[str] = set()

    def start(self) -> None:
        """Scan now, in the background (the engine's start does not wait for it), and again
        every ``recovery_interval_s`` on a store other nodes share."""
        self._loop = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
            self._loop = None

    async def _run(self) -> None:
        shared = isinstance(self.engine.store, TaskHolds)
        while True:
            try:
                await self.scan()
                if not shared:
                    return
            except Exception:  # (the store briefly unavailable, say)
                log.exception("finding the channel messages owed their handling failed")
            await asyncio.sleep(self.engine.recovery_interval_s)

    async def scan(self) -> int:
        """Start the handling of every message owed it; how many tasks had some."""
        found = 0
        after = ""
        store = self.engine.store
        self._sighting = set()
        while batch := await store.tasks_in_states(SCAN_STATES, SCAN_BATCH, after):
            for record in batch:
                if await self._handle(record):
                    found += 1
            after = batch[-1].id
        self._passes += 1
        self._sighted = self._sighting
        return found

    async def _handle(self, record: TaskRecord) -> bool:
        messages = owed(record.task)
        turns = {m.message_id for m in messages if owes_turn(m)}
        self._sighting |= turns
        if self._passes:  # (see __init__)
            messages = [m for m in messages if m.message_id not in turns - self._sighted]
        if not messages or lifecycle.is_terminal(record.state):
            return False
        if record.state in (TaskState.SUBMITTED, TaskState.WORKING) and not self.engine.running(
            record.id
        ):
            # A turn nobody runs here: the engine's recovery gives it back first (on this
            # node, or on the one holding it); its messages are found at the next scan.
            return False
        body = self.handler(record.task, messages)
        started = await self.engine.run_stored(record, messages[0], body)
        if started:
            log.info("handling %d message(s) owed on task %s", len(messages), record.id)
        return started
