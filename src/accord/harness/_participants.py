"""``participant.changed``: an admin's task envelope that changes the participants or their
roles, judged by hooks before it is stored.

Unhooked, such an envelope is stored with its change at once (intake). Hooked, intake
diverts it here: ``pre`` and ``in`` may replace the list asked for or refuse it (the sender
is answered "message not accepted: <reason>" in the unchanged state, and nothing changes),
the change is made (judged again against the task as it stands) as the turn starts, ``post``
hears of it, and the turn goes on as for any message.
"""

from __future__ import annotations

import logging
from functools import partial

import msgspec

from accord.agents import AgentError, ExecutorFunction, RequestContext, TaskHandle
from accord.core import Outcome, TaskRecord, refused
from accord.core import agent as agent_moves
from accord.harness._moves import Moves, Who
from accord.harness._received import refusal
from accord.harness._wire import Participant, Role
from accord.harness.channels._state import changed_by
from accord.harness.core import _conversation as conversation
from accord.harness.core import _envelope as envelopes
from accord.harness.core._fields import FieldError, check_participants
from accord.harness.core._identity import claimed
from accord.harness.core._intake import updated
from accord.harness.core._state import extension_of, metadata_with
from accord.harness.hooks._base import HookAbort
from accord.harness.hooks._operations import PARTICIPANT_CHANGED, ParticipantChanged
from accord.harness.hooks._registry import Hooks
from accord.wire import A2AError, ErrorKind

log = logging.getLogger("accord.harness.hooks")


class ParticipantChanges:
    def __init__(self, hooks: Hooks, moves: Moves) -> None:
        self.hooks = hooks
        self.moves = moves

    def handler(self, then: ExecutorFunction) -> ExecutorFunction:
        """Judge the message's change, make it, then run ``then`` (the turn) on it."""

        async def change(ctx: RequestContext, task: TaskHandle) -> None:
            if await self.run(ctx, task):
                await then(ctx, task)

        return change

    async def run(self, ctx: RequestContext, task: TaskHandle) -> bool:
        """Whether the change was made."""
        current = await task.current()
        extension = extension_of(current)
        envelope = envelopes.find(ctx.message)
        sender = claimed(ctx.message) or ""
        if extension is None or envelope is None:
            return True  # (intake diverts only a harness task's envelope)
        who = Who.on(extension, sender, ctx.message.message_id)
        message_id = ctx.message.message_id
        pre, body, post = PARTICIPANT_CHANGED.points
        try:
            asked = updated(extension, envelope, sender, who.role or Role.WATCHER)
            context = ParticipantChanged(
                **who.fields(current.id),
                previous=extension.participants,
                participants=asked.participants,
            )
            context = await self.hooks.run(pre, context)
            context = await self.hooks.run(body, context)
            participants = checked(context.participants)
        except (HookAbort, A2AError) as exc:
            reason = exc.message
            await self.moves.decide(
                task, partial(refusal, message_id=message_id, reason=reason), who
            )
            return False
        # The turn starts with the change: a snapshot of a parked task would end the
        # sender's request before the turn it asks for.
        changed = partial(_changed, envelope=envelope, sender=sender, participants=participants)
        decision = partial(conversation.chain, steps=(conversation.start_turn, changed))
        try:
            await self.moves.decide(task, decision, who)
        except AgentError as exc:  # the task changed meanwhile: the sender is no admin now
            await self.moves.decide(
                task, partial(refusal, message_id=message_id, reason=str(exc)), who
            )
            return False
        try:
            await self.hooks.run(post, context)
        except HookAbort as abort:
            log.warning("participant.changed.post on %s: %s (the change stands)", current.id, abort)
        return True


def checked(participants: tuple[Participant, ...]) -> tuple[Participant, ...]:
    """A list a hook gave, checked as a task envelope's is (accord.harness.core._fields)."""
    try:
        check_participants(participants)
    except FieldError as exc:
        raise HookAbort(str(exc), "invalid") from None
    return participants


def _changed(
    record: TaskRecord | None,
    now_ms: int,
    envelope: envelopes.Envelope,
    sender: str,
    participants: tuple[Participant, ...],
) -> Outcome:
    extension = extension_of(record.task) if record is not None else None
    if record is None or extension is None:  # (a harness task stays one)
        return refused(
            "intake-refused", A2AError(ErrorKind.UNSUPPORTED_OPERATION, "not a conversation")
        )
    role = extension.role_of(sender) or Role.WATCHER
    try:
        asked = updated(extension, envelope, sender, role)
    except A2AError as exc:
        return refused("intake-refused", exc)
    final = msgspec.structs.replace(asked, participants=participants)
    try:  # (the channels the same envelope sets, checked against the final participants)
        payload = f"{envelope.field}.payload"
        channels = changed_by(record.task.metadata, envelope.payload, payload, record.id, final)
    except A2AError as exc:
        return refused("intake-refused", exc)
    if channels is None:
        return conversation.with_extension(record, now_ms, extension=final)
    return agent_moves.set_metadata(record, metadata_with(channels, final), now_ms)
