"""The harness's channels at work: what it does with a participant's channel message (the
handler intake diverts it to), and what it sends itself (help requests, messages, channel
changes), with the hooks of each.

Help requests are asked with :meth:`Channels.ask` — by the ``ask_participant`` tool of a
turn (accord.harness.channels._tool), or by Python code — from inside a run on the task::

    request = await agent.channels.ask(task, who, "bob", "Which venue?", options=("A", "B"))

which parks the task in INPUT_REQUIRED (``awaiting-answer``) with the request as its status
message; the run's turn is over. A reply from bob resumes the task with a turn of its own.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Collection, Sequence
from functools import partial
from typing import Any

import msgspec

from accord.agents import AgentError, ExecutorFunction, RequestContext, TaskHandle
from accord.core import Outcome, TaskRecord, lifecycle, refused
from accord.errors import AccordError
from accord.harness import _received as received
from accord.harness._moves import Decides, Moves, Who
from accord.harness.channels import _decisions as decisions
from accord.harness.channels import _judge as judging
from accord.harness.channels import _owed as owed
from accord.harness.channels._data import ChannelData, Kind
from accord.harness.channels._judge import DELIVER_KEY, Judged
from accord.harness.channels._state import (
    Channel,
    HelpRequest,
    channels_from,
    members,
    state_of,
    with_channels,
)
from accord.harness.core._conversation import Decision, chain
from accord.harness.core._identity import claimed
from accord.harness.core._state import extension_of
from accord.harness.hooks._base import HookAbort
from accord.harness.hooks._operations import (
    CHANNEL_RECEIVED,
    CHANNEL_SENT,
    HELP_ANSWERED,
    HELP_REQUESTED,
    MESSAGE_RECEIVED,
    ChannelReceived,
    ChannelSent,
    HelpAnswered,
    HelpRequested,
)
from accord.harness.hooks._registry import Hooks
from accord.wire import A2AError, ErrorKind, Message, Part, Role, Task, TaskState

STALL_ENV = "ACCORD_TEST_STALL_CHANNEL_HANDLING"
MAX_QUESTION = 10_000  # characters of a help request's question
MAX_OPTIONS = 32
MAX_OPTION = 500


class ChannelError(AccordError, ValueError):
    """What the harness was asked to send cannot be sent (the reason says why: an unknown
    participant, a channel the task does not have, a hook's refusal …); nothing changed."""


class Channels:
    def __init__(
        self,
        hooks: Hooks,
        moves: Moves,
        agent_id: str,
        roster: Collection[str] = (),
        *,
        hearing: received.Hearing | None = None,
    ) -> None:
        self.hooks = hooks
        self.moves = moves
        # message.received: what the gate decided before the message was stored
        self.hearing = hearing or received.Hearing(hooks)
        self.agent_id = agent_id
        self.roster = frozenset(roster)
        self._taking: set[str] = set()  # the messages whose handlers run here now
        # Tests only: handlers wait before they judge, so that a test can kill the process
        # between a message's append and its handling (never set in production).
        self._stall = asyncio.Event() if os.environ.get(STALL_ENV) == "1" else None

    # --- a participant's message -----------------------------------------------------------

    def judge(self, task: Task | None, message: Message, sender: str) -> Judged | None:
        """Intake's judgement of ``message`` (see :mod:`accord.harness.channels._judge`)."""
        if not judging.concerns_channels(task, message):
            return None  # (most messages: nothing read of the task for them)
        extension = extension_of(task) if task is not None else None
        return judging.judge(
            task, extension, message, sender, agent_id=self.agent_id, roster=self.roster
        )

    def handler(self, judged: Judged, then: ExecutorFunction) -> ExecutorFunction:
        """The run of a channel message (or a reply): judged by the hooks, then relayed (and
        owed to the channel's agents), the help request it answers marked, then ``then``
        (the turn, the hooks' judgement of the message already made) when it starts one."""

        async def handle(ctx: RequestContext, task: TaskHandle) -> None:
            if await self.take(ctx, task, judged):
                await then(ctx, task)

        return handle

    async def take(self, ctx: RequestContext, task: TaskHandle, judged: Judged) -> bool:
        """Whether a turn runs on the message now. Its handling is decided once: a message
        whose handling the task records already (its handler ran again after a restart, or
        twice at once) changes nothing more."""
        message_id = ctx.message.message_id
        if message_id in self._taking:
            return False  # (its handler runs in this process already)
        self._taking.add(message_id)
        try:
            if self._stall is not None:
                await self._stall.wait()  # (tests only: a crash between append and handling)
            return await self._take(ctx, task, judged)
        finally:
            self._taking.discard(message_id)

    async def _take(self, ctx: RequestContext, task: TaskHandle, judged: Judged) -> bool:
        current = await task.current()
        message_id = ctx.message.message_id
        if message_id in owed.handled(current):
            return False
        sender = claimed(ctx.message) or ""
        who = Who.on(extension_of(current), sender, message_id)
        try:
            seen = await self._heard(current.id, judged, ctx.message, who)
        except HookAbort as abort:
            await self._refuse(task, message_id, abort.message, who)
            return False
        turns = [False]  # (whether the decision as stored, its last run, started a turn)

        def decide(record: TaskRecord | None, now_ms: int) -> Outcome:
            turns[0] = False
            if record is not None and message_id in owed.handled(record.task):
                return Outcome("unchanged", record=record)
            answered, told = _still_open(record, judged, sender)
            turn = judged.turn and (judged.answers is None or answered is not None)
            relayed = answered is not None and judged.answers is not None and judged.answers.relay
            # (a relayed question's answer goes to the sub-task that asked: no turn here)
            turns[0] = turn and not relayed
            taken = partial(
                decisions.received,
                judged=judged,
                sender=sender,
                turn=turns[0],
                answered=answered,
                told=told,
                relayed=bool(relayed),
            )
            if seen is ctx.message:
                return taken(record, now_ms)
            replaced = partial(received.replaced, message=seen)
            return chain(record, now_ms, (taken, replaced))

        await self.moves.decide(task, decide, who)
        return turns[0]

    def refusing(self, reason: str) -> ExecutorFunction:
        """The run of a message owed its handling that can no longer be taken (its sender
        left the channel meanwhile, say): refused with ``reason``."""

        async def handle(ctx: RequestContext, task: TaskHandle) -> None:
            current = await task.current()
            sender = claimed(ctx.message) or ""
            who = Who.on(extension_of(current), sender, ctx.message.message_id)
            await self._refuse(task, ctx.message.message_id, reason, who)

        return handle

    async def _refuse(self, task: Decides, message_id: str, reason: str, who: Who) -> None:
        """Refused: nothing relayed, nothing delivered, no turn, the model never reads it;
        the sender is told (once)."""
        refusal = partial(received.refusal, message_id=message_id, reason=reason)
        await self.moves.decide(task, partial(_once, message_id=message_id, then=refusal), who)

    async def _heard(self, task_id: str, judged: Judged, message: Message, who: Who) -> Message:
        """``message.received`` (every participant's message on a channel, and every reply),
        ``channel.received`` (the harness is in the channel) and ``help.answered`` (the
        message answers a request): the message as the model is to see it; a HookAbort
        refuses it."""
        seen = message
        if self.hooks.wants(MESSAGE_RECEIVED):
            seen = await self.hearing.judge(task_id, message, who)
        data = judged.data
        if data is not None and judged.received and self.hooks.wants(CHANNEL_RECEIVED):
            heard = ChannelReceived(
                **who.fields(task_id),
                channel_id=data.channel_id,
                kind=data.kind,
                text=data.content_text,
                in_reply_to=data.in_reply_to,
            )
            await self.hooks.perform(CHANNEL_RECEIVED, heard)
        request = judged.answers
        if request is not None and self.hooks.wants(HELP_ANSWERED):
            reply = data.content_text if data is not None else judged.message.text()
            answered = HelpAnswered(
                **who.fields(task_id), request_id=request.id, question=request.question, reply=reply
            )
            await self.hooks.perform(HELP_ANSWERED, answered)
        return seen

    # --- what the harness sends ------------------------------------------------------------

    async def ask(
        self,
        task: Decides,
        who: Who,
        participant_id: str,
        question: str,
        options: Sequence[str] = (),
        *,
        channel_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        relay: str | None = None,
    ) -> HelpRequest:
        """Ask ``participant_id`` for help: the request goes on ``channel_id`` (default: the
        task's own) to its addressee, and the task parks in INPUT_REQUIRED
        (``awaiting-answer``) with it as its status message, so the caller's turn is over
        (a task parked already — a second question — keeps its state: the request is a
        status update of its own). ``metadata`` joins the request message's (the model call
        that asked, say). ``who`` is whom the turn is for
        (the hooks' ``sender``). ``relay`` marks a sub-task's question asked on its behalf
        (its answer goes to the sub-task and starts no turn here). ChannelError when the
        request cannot be made: nothing is sent then."""
        current = await task.current()
        channel = channel_id or current.id
        self.check_ask(current, participant_id, question, options, channel_id=channel)
        options = tuple(options)
        if self.hooks.wants(HELP_REQUESTED):
            asked = HelpRequested(
                **who.fields(current.id),
                participant_id=participant_id,
                channel_id=channel,
                question=question,
                options=options,
            )
            try:
                asked = await self.hooks.perform(HELP_REQUESTED, asked)
            except HookAbort as abort:
                raise ChannelError(f"help request refused: {abort}") from None
            question, options = asked.question, tuple(asked.options)
            _check_question(question, options)
        recipients = (participant_id,) if participant_id in self.roster else ()
        question = await self._sent(
            current.id, who, channel, "help_request", question, None, recipients
        )
        made: list[HelpRequest] = []

        def decide(record: TaskRecord | None, now_ms: int) -> Outcome:
            problem = self._problem(record, channel, participant_id)
            if problem is not None or record is None:
                return refused("channel-refused", A2AError(ErrorKind.INVALID_PARAMS, problem or ""))
            request = HelpRequest(
                id=decisions.help_request_id(record),
                channel_id=channel,
                to=participant_id,
                question=question,
                options=options,
                relay=relay,
            )
            made[:] = [request]
            message = decisions.help_message(request, self.agent_id, recipients, metadata)
            return decisions.ask(record, now_ms, request, message)

        await self._decide(task, decide, who)
        return made[0]

    async def send(
        self,
        task: TaskHandle,
        who: Who,
        text: str,
        *,
        channel_id: str | None = None,
        kind: Kind = "message",
        in_reply_to: str | None = None,
        parts: Sequence[dict[str, Any]] = (),
    ) -> Message:
        """Send ``text`` (and content ``parts``, as the schema has them) on ``channel_id``
        (default: the task's own) as the harness: a status update in the task's state that
        the channel's agent members are delivered. Returns the message as stored."""
        current = await task.current()
        channel = channel_id or current.id
        self._check_member(current, channel)
        recipients = tuple(sorted(self._channel_agents(current, channel)))
        text = await self._sent(current.id, who, channel, kind, text, in_reply_to, recipients)
        data = ChannelData(
            channel_id=channel,
            sender=self.agent_id,
            kind=kind,
            text=text,
            parts=tuple(parts),
            in_reply_to=in_reply_to,
        )
        sent: list[Message] = []

        def decide(record: TaskRecord | None, now_ms: int) -> Outcome:
            problem = self._problem(record, channel, None)
            if problem is not None or record is None:
                return refused("channel-refused", A2AError(ErrorKind.INVALID_PARAMS, problem or ""))
            marks: dict[str, Any] = {DELIVER_KEY: list(recipients)} if recipients else {}
            message = Message(
                message_id=f"{record.task.id}:channel:{record.seq + 1}",
                role=Role.AGENT,
                parts=[Part(text=text), data.as_part()],
                metadata=marks,
            )
            sent[:] = [message]
            return decisions.send(record, now_ms, message)

        await self._decide(task, decide, who)
        return sent[0]

    async def set_channels(self, task: TaskHandle, who: Who, channels: Sequence[Channel]) -> None:
        """Replace the task's further channels (the default one is always there): each
        channel's members are participants of the task. ChannelError otherwise."""
        current = await task.current()
        extension = extension_of(current)
        if extension is None:
            raise ChannelError(f"task {current.id} is not a conversation of this harness")
        listed = [msgspec.to_builtins(channel) for channel in channels]
        try:
            wanted = channels_from(listed, "channels", current.id, extension)
        except A2AError as exc:
            raise ChannelError(exc.message) from None

        def decide(record: TaskRecord | None, now_ms: int) -> Outcome:
            state = with_channels(state_of(record.task), wanted) if record is not None else wanted
            return decisions.with_state(record, now_ms, state)

        await self._decide(task, decide, who)

    async def open_channel(
        self, task: TaskHandle, who: Who, channel_id: str, participants: Sequence[str]
    ) -> None:
        """Open ``channel_id`` with ``participants`` (or change its members)."""
        kept = [c for c in state_of(await task.current()).channels if c.channel_id != channel_id]
        opened = Channel(channel_id=channel_id, members=tuple(participants))
        await self.set_channels(task, who, [*kept, opened])

    async def close_channel(self, task: TaskHandle, who: Who, channel_id: str) -> None:
        kept = [c for c in state_of(await task.current()).channels if c.channel_id != channel_id]
        await self.set_channels(task, who, kept)

    # --- the parts ---------------------------------------------------------------------------

    async def _sent(
        self,
        task_id: str,
        who: Who,
        channel_id: str,
        kind: Kind,
        text: str,
        in_reply_to: str | None,
        recipients: Sequence[str],
    ) -> str:
        """``channel.sent``: the text to send (a hook's replacement), or ChannelError."""
        if not self.hooks.wants(CHANNEL_SENT):
            return text
        context = ChannelSent(
            **who.fields(task_id),
            channel_id=channel_id,
            kind=kind,
            text=text,
            in_reply_to=in_reply_to,
            recipients=tuple(recipients),
        )
        try:
            context = await self.hooks.perform(CHANNEL_SENT, context)
        except HookAbort as abort:
            raise ChannelError(f"channel message refused: {abort}") from None
        return context.text

    async def _decide(self, task: Decides, decision: Any, who: Who) -> None:
        try:
            await self.moves.decide(task, decision, who)
        except AgentError as exc:
            raise ChannelError(str(exc)) from None

    def _channel_agents(self, task: Task, channel_id: str) -> set[str]:
        extension = extension_of(task)
        found = members(task, extension, channel_id) if extension is not None else None
        return set(found or ()) & self.roster - {self.agent_id}

    def _check_member(self, task: Task, channel_id: str) -> None:
        problem = self._problem_on(task, channel_id, None)
        if problem is not None:
            raise ChannelError(problem)

    def check_ask(
        self,
        task: Task,
        participant_id: str,
        question: str,
        options: Sequence[str] = (),
        *,
        channel_id: str | None = None,
    ) -> None:
        """ChannelError when :meth:`ask` would refuse this request on ``task`` as it is."""
        _check_question(question, options)
        problem = self._problem_on(task, channel_id or task.id, participant_id)
        if problem is not None:
            raise ChannelError(problem)

    def _problem(self, record: TaskRecord | None, channel_id: str, to: str | None) -> str | None:
        if record is None:
            return "the task is gone"
        return self._problem_on(record.task, channel_id, to)

    def _problem_on(self, task: Task, channel_id: str, to: str | None) -> str | None:
        """Why the harness cannot send on ``channel_id`` (to ``to``), or None."""
        extension = extension_of(task)
        if extension is None:
            return f"task {task.id} is not a conversation of this harness"
        state = task.status.state
        if isinstance(state, TaskState) and lifecycle.is_terminal(state):
            return f"task {task.id} is over"
        found = members(task, extension, channel_id)
        if found is None:
            return f"task {task.id} has no channel {channel_id!r}"
        if channel_id != task.id and self.agent_id not in found:
            return f"the harness is not a member of channel {channel_id!r}"
        if to is None:
            return None
        if to == self.agent_id:
            return "the harness does not ask itself"
        if to not in found:
            where = "the task" if channel_id == task.id else f"channel {channel_id!r}"
            return f"{to!r} is not a participant of {where}"
        return None


def _check_question(question: str, options: Sequence[str]) -> None:
    if not question.strip():
        raise ChannelError("a help request needs a question")
    if len(question) > MAX_QUESTION:
        raise ChannelError(f"a question is at most {MAX_QUESTION} characters")
    if len(options) > MAX_OPTIONS:
        raise ChannelError(f"a help request offers at most {MAX_OPTIONS} options")
    for option in options:
        if not option.strip() or len(option) > MAX_OPTION:
            raise ChannelError(f"an option is 1 to {MAX_OPTION} characters")


def _once(record: TaskRecord | None, now_ms: int, message_id: str, then: Decision) -> Outcome:
    """``then``, unless the task records the handling of ``message_id`` already."""
    if record is not None and message_id in owed.handled(record.task):
        return Outcome("unchanged", record=record)
    return then(record, now_ms)


def _still_open(record: TaskRecord | None, judged: Judged, sender: str) -> tuple[str | None, str]:
    """The request ``judged`` answers, if it still waits for its answer when the message
    is taken (another reply may have answered it meanwhile), and what the sender is told."""
    request = judged.answers
    if request is None:
        return None, judged.told
    current = state_of(record.task).request(request.id) if record is not None else None
    if current is None or current.to != sender:
        return None, f"the help request {request.id} is gone; your reply is recorded"
    if current.answered_by is not None:
        return None, f"the help request {request.id} was answered already; your reply is recorded"
    return request.id, ""
