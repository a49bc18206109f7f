"""``message.received``: hooks judge each ordinary participant message before the model
sees it.

It runs in the turn, not at intake (intake decides before anything is stored and must not
wait on the network; a hook may be a remote service): the message is stored as sent, and
what the hooks decided is recorded durably before any model call
(:data:`~accord.harness.transcript.RECEIVED_KEY`), so the model never sees a refused
message, sees a replaced one as replaced, and every later turn (after a restart, on another
node) sees the same. A refusal answers the sender with "message not accepted: <reason>" in
the task's unchanged state.
"""

from __future__ import annotations

from functools import partial

import msgspec

from accord.core import agent as moves
from accord.core.outcome import Outcome
from accord.core.records import TaskRecord
from accord.harness.core import conversation
from accord.harness.core.state import RECEIVED_KEY
from accord.harness.hooks.base import AbortReason, HookAbort
from accord.harness.hooks.operations import MESSAGE_RECEIVED, MessageReceived
from accord.harness.hooks.registry import Hooks
from accord.harness.moves import Who
from accord.harness.wire import COMMAND_METADATA, PARTICIPANT_METADATA
from accord.wire.codec import WireError, convert, to_builtins
from accord.wire.model import Message, Part, Role

REFUSED_PREFIX = "message not accepted: "


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
