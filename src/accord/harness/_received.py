"""``message.received``: hooks judge each participant message before anything of it is
stored.

The harness judges a message in a gate of its engine (:class:`Hearing`, added by
``HarnessAgent.attach_engine``): the gate may wait on the hooks (a remote one is a network
call), which the pure intake may not, and its refusal comes before the message is appended.
A refused message is refused outright — the sender gets ``message not accepted: <reason>``
as an error, and nothing of it is stored: not in the history, not in a stream, not pushed,
not on the dashboard, not in a task named after it. (Refusing before storing, rather than
storing a redacted tombstone: an append-only log cannot take back what it told streams and
push, and a tombstone would still tell every participant that something was refused.)

What the hooks decided about a message they let through (passed, or replaced for the
model) is handed to the run that handles it, which records a replacement durably before any
model call (:data:`~accord.harness._transcript.RECEIVED_KEY`): the model never sees a refused
message, sees a replaced one as replaced, and every later turn (after a restart, on another
node) sees the same. A message no gate judged — the harness's own (a sub-task's end told its
parent), or one whose handling a crash caught before its run took the gate's judgement — is
judged in its run instead (:meth:`Hearing.judge`), after it was stored: a refusal there
answers the sender with "message not accepted: <reason>" in the task's unchanged state.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from functools import partial

import msgspec

from accord.agents import Screened
from accord.core import Caller, Outcome, TaskRecord
from accord.core import agent as moves
from accord.harness._moves import Who
from accord.harness._wire import COMMAND_METADATA, PARTICIPANT_METADATA
from accord.harness.core import _conversation as conversation
from accord.harness.core._refusal import refusal as refused_by_rule
from accord.harness.core._state import RECEIVED_KEY
from accord.harness.hooks._base import AbortReason, HookAbort
from accord.harness.hooks._operations import MESSAGE_RECEIVED, MessageReceived
from accord.harness.hooks._registry import Hooks
from accord.store import TaskStore
from accord.wire import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    WireError,
    convert,
    to_builtins,
)

REFUSED_PREFIX = "message not accepted: "
# What the gate judges a message as: the message as it is to be stored, and whom for.
Judging = Callable[[SendMessageRequest, Task | None, Caller], tuple[Message, Who] | None]


class Hearing:
    """``message.received`` as a gate of the engine (``Engine.add_gate``): every message a
    participant sends to a harness task is judged by the hooks before anything of it is
    stored; a refusal refuses the request (nothing stored). What the hooks decided about a
    message they let through waits for the run that handles it (:meth:`judge`), in this
    process: at most ``remembered`` messages, the oldest forgotten first (a forgotten one is
    judged again in its run)."""

    def __init__(self, hooks: Hooks, remembered: int = 4096) -> None:
        self.hooks = hooks
        self._store: TaskStore | None = None
        self._judging: Judging | None = None
        self._remembered = remembered
        # (task id, message id) -> the message the model is to see instead (None: as stored)
        self._heard: OrderedDict[tuple[str, str], Message | None] = OrderedDict()

    def attach(self, store: TaskStore, judging: Judging) -> None:
        """Judge messages from here on, reading their tasks from ``store``; ``judging``
        says what a message is to be stored as and whom it is for (None: not judged here)."""
        self._store = store
        self._judging = judging

    @property
    def attached(self) -> bool:
        return self._store is not None

    async def screen(self, request: SendMessageRequest, caller: Caller) -> Screened | None:
        if self._store is None or self._judging is None or not self.hooks.wants(MESSAGE_RECEIVED):
            return None
        task: Task | None = None
        task_id = request.message.task_id
        if task_id:
            record = await self._store.get_task(task_id, caller.tenant)
            if record is None:
                return None  # (the decision refuses it: an unknown task)
            task = record.task
        judged = self._judging(request, task, caller)
        if judged is None:
            return None  # refused anyway (a stranger, say), or the harness's own
        message, who = judged
        try:
            # (a new task has no id yet: its hooks see an empty task_id)
            seen = await receive(self.hooks, task_id, message, who)
        except HookAbort as abort:
            raise refused_by_rule(
                REFUSED_PREFIX + abort.message, {"reason": str(abort.reason)}
            ) from None
        replaced = None if seen is message else seen
        return Screened(_passes, partial(self._admitted, message.message_id, replaced))

    async def _admitted(self, message_id: str, replaced: Message | None, task_id: str) -> None:
        self._heard[(task_id, message_id)] = replaced
        while len(self._heard) > self._remembered:
            self._heard.popitem(last=False)

    async def judge(self, task_id: str, message: Message, who: Who) -> Message:
        """In the run that handles ``message`` (stored): the message as the model is to see
        it — as the gate's hooks decided, else as the hooks decide now (raising the
        HookAbort that refuses it)."""
        key = (task_id, message.message_id)
        if key in self._heard:
            replaced = self._heard.pop(key)
            if replaced is None:
                return message
            return msgspec.structs.replace(
                replaced, task_id=message.task_id, context_id=message.context_id
            )
        return await receive(self.hooks, task_id, message, who)


def _passes(task: Task | None) -> None:
    """The gate's part of the decision: the hooks' refusal came before it."""
    return None


async def receive(hooks: Hooks, task_id: str, message: Message, who: Who) -> Message:
    """The message as the model is to see it (``message`` itself when no hook changed it);
    raises the HookAbort that refuses it."""
    sent = to_builtins(message)
    context = MessageReceived(**who.fields(task_id), message=sent)
    context = await hooks.perform(MESSAGE_RECEIVED, context)
    if context.message == sent:
        return message
    try:
        replaced = convert(context.message, Message)
    except WireError as exc:
        raise HookAbort(
            f"a hook replaced the message with no message ({exc})", AbortReason.INVALID
        ) from None
    # What a replacement cannot change: whose message it is, and where it sits.
    metadata = dict(replaced.metadata) if isinstance(replaced.metadata, dict) else {}
    metadata.pop(COMMAND_METADATA, None)
    metadata[PARTICIPANT_METADATA] = who.sender
    return msgspec.structs.replace(
        replaced,
        message_id=message.message_id,
        role=Role.USER,
        task_id=message.task_id,
        context_id=message.context_id,
        metadata=metadata,
    )


def refusal(record: TaskRecord | None, now_ms: int, message_id: str, reason: str) -> Outcome:
    """ "message not accepted: <reason>" in the task's unchanged state, on a note the model
    never sees, then the refusal recorded in the task's metadata: the model never sees the
    message either."""
    task_id = record.task.id if record is not None else ""
    seq = record.seq + 1 if record is not None else 0
    note = Message(
        message_id=f"{task_id}:status:{seq}",
        role=Role.AGENT,
        parts=[Part(text=REFUSED_PREFIX + reason)],
        metadata={RECEIVED_KEY: {"refused": message_id}},
    )
    answered = partial(conversation.say, message=note)
    return conversation.chain(record, now_ms, (answered, partial(_recorded, refused=message_id)))


def replaced(record: TaskRecord | None, now_ms: int, message: Message) -> Outcome:
    """The replacement of ``message`` (same id) recorded in the task's metadata."""
    return _recorded(record, now_ms, replaced=message)


def _recorded(
    record: TaskRecord | None,
    now_ms: int,
    refused: str | None = None,
    replaced: Message | None = None,
) -> Outcome:
    """The task's metadata with one more decision of the hooks in RECEIVED_KEY."""
    metadata = record.task.metadata if record is not None else None
    base = dict(metadata) if isinstance(metadata, dict) else {}
    kept = base.get(RECEIVED_KEY)
    recorded = dict(kept) if isinstance(kept, dict) else {}
    if refused is not None:
        recorded["refused"] = [*recorded.get("refused", ()), refused]
    if replaced is not None:
        replacements = dict(recorded.get("replaced") or {})
        replacements[replaced.message_id] = to_builtins(replaced)
        recorded["replaced"] = replacements
    base[RECEIVED_KEY] = recorded
    return moves.set_metadata(record, base, now_ms)
