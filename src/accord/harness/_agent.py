"""The harness agent: an accord executor whose intake applies the conversation rules and
whose turns are answered by a model, with commands and hooks.

Its intake (:meth:`HarnessAgent.intake`) runs before anything of a message is stored: it
establishes the sender, refuses strangers with the unknown-task error, turns a command into
a handler that answers it instead of a turn, and a participant's completion into a handler
that cuts the running turn. Its gate (:class:`~accord.harness._received.Hearing`, added to
the engine by :meth:`HarnessAgent.attach_engine`) runs the ``message.received`` hooks on
every participant's message before that: a refused message is never stored. Its access
check (:meth:`HarnessAgent.access`) keeps every other operation on a harness task to its
participants. Its turns (:meth:`HarnessAgent.execute`) read the conversation from the task,
ask the task's model, and park the task with the answer.

Hooks (``agent.hooks``) run on the operations docs/harness.md lists; commands
(``agent.commands``) are registered there too. Both are frozen when the agent is first
used or its card is built.

Messages that arrive while a turn runs in this process join it: the model is asked again
with them before the task parks, and each of their senders' requests ends with that turn.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec

from accord.agents import (
    Access,
    Admit,
    Divert,
    ExecutorFunction,
    MediaFiles,
    RequestContext,
    TaskHandle,
    Verdict,
)
from accord.core import AFTER_KEY, Caller, lifecycle
from accord.harness import _received as received
from accord.harness import _usage as usage
from accord.harness import a2ui
from accord.harness._command_run import CommandRunner
from accord.harness._compacting import Compactor
from accord.harness._completion import Completion, register_unresolved_rule
from accord.harness._journal import JournalError
from accord.harness._media import with_files
from accord.harness._moves import Moves, Who
from accord.harness._participants import ParticipantChanges
from accord.harness._roster import Roster
from accord.harness._settings import HarnessSettings, ModelFactory
from accord.harness._steps import Journal, Steps, answer_id, journaled
from accord.harness._transcript import MODEL_CALL_KEY, Conversation, entries, model_calls
from accord.harness._wire import (
    CHANNEL_MEDIA_TYPE,
    CHANNEL_URI,
    COMMAND_METADATA,
    COMMANDS_URI,
    EVENT_MEDIA_TYPE,
    STATUS_URI,
    TASK_MEDIA_TYPE,
    TASK_URI,
    TaskExtension,
)
from accord.harness.a2ui import A2UI_MEDIA_TYPE
from accord.harness.channels._desk import Channels
from accord.harness.channels._judge import OWED_TURN, Judged
from accord.harness.channels._judge import owed as owed_message
from accord.harness.channels._outbox import ChannelDispatcher
from accord.harness.channels._outbox_store import channel_outbox
from accord.harness.channels._owed import OwedScan, owed, owes_turn
from accord.harness.channels._state import changed_by as channels_changed_by
from accord.harness.channels._tool import AskParticipant
from accord.harness.commands._builtins import register_builtins
from accord.harness.commands._parse import CommandCall, parse_command
from accord.harness.commands._registry import CommandRegistry
from accord.harness.core import _conversation as conversation
from accord.harness.core import _envelope as envelopes
from accord.harness.core import _failure as failure
from accord.harness.core import _identity as identity
from accord.harness.core._delegation import (
    assignee_of,
    ended_with,
    info_of,
    is_participant_task,
)
from accord.harness.core._failure import failure_line
from accord.harness.core._identity import claimed
from accord.harness.core._intake import Complete, Continue, Policy, Start, judge, refuse_watcher
from accord.harness.core._state import (
    ACCORD_PREFIX,
    extension_of,
    metadata_with,
    without_harness_keys,
)
from accord.harness.delegation import Delegation
from accord.harness.delegation._doorbell import Doorbell
from accord.harness.delegation._follower import Follower
from accord.harness.delegation._internal import is_harness
from accord.harness.delegation._tools import CreateTaskForParticipant, SpawnSubtask
from accord.harness.hooks._base import HookAbort
from accord.harness.hooks._operations import (
    LLM_INVOKED,
    MESSAGE_RECEIVED,
    PARTICIPANT_CHANGED,
    TURN_FINISHED,
    TURN_STARTED,
    TurnFinished,
    TurnStarted,
)
from accord.harness.hooks._registry import Hooks
from accord.harness.models import Model, ModelError, Usage
from accord.harness.plugins._prompts import Prompts
from accord.harness.skills import SkillLibrary
from accord.harness.tools import Tool, ToolSet
from accord.harness.tools._intrinsic import INTRINSICS
from accord.harness.tools._mcp import McpServer, McpServerSettings
from accord.telemetry import agents as telemetry
from accord.wire import (
    UNSET,
    A2AError,
    AgentExtension,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
    task_not_found,
)

if TYPE_CHECKING:
    from accord.agents import Host

INPUT_MODES = (
    "text/plain",
    "application/json",
    TASK_MEDIA_TYPE,
    CHANNEL_MEDIA_TYPE,
    EVENT_MEDIA_TYPE,
    A2UI_MEDIA_TYPE,
)
OUTPUT_MODES = (
    "text/plain",
    "application/json",
    TASK_MEDIA_TYPE,
    CHANNEL_MEDIA_TYPE,
    A2UI_MEDIA_TYPE,
)
STALL_TURN_ENV = "ACCORD_TEST_STALL_TURN_START"
# SubscribeToTask on a harness task replays the streamed events among the newest this many
# events of its log after the Task (tiny-harness's clients render events, not the Task).
SUBSCRIBE_REPLAY = 1000
TURN_REFUSED = "turn refused: "
ANSWER_WITHHELD = "answer withheld: "
NO_TEXT = "(the model answered with no text)"

log = logging.getLogger("accord.harness")


@dataclass(eq=False)
class _Turn:
    """A turn running in this process: messages that come meanwhile join ``incoming``."""

    incoming: list[Message] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    heard: set[str] = field(default_factory=set)  # joined messages the hooks judged already


class HarnessAgent:
    # A continued turn acts on the world (tools, hooks) only once a command of it is durable
    # (a tool after its model answer's journal entry, hooks of the turn after a flush): on
    # one node its message is stored with the turn's WORKING, one commit (accord.agents's
    # ActsAfterFirstMove; docs/harness.md, "One commit a turn").
    acts_after_first_move = True

    def __init__(
        self,
        settings: HarnessSettings,
        models: Mapping[str, Model] | None = None,
        *,
        model_factory: Callable[[str], Model] | None = None,
    ) -> None:
        """``models`` answers turns by model name; a name it lacks is built once with
        ``model_factory`` (the default reads ``scripted:PATH`` specs)."""
        self.settings = settings
        self.policy = Policy(
            agent_id=settings.agent_id,
            delegators=frozenset(settings.delegators),
            models=settings.selectable,
        )
        self._models = dict(models or {})
        self._model_factory = model_factory or ModelFactory(settings)
        self._turns: dict[str, _Turn] = {}
        # Tests only: a plain message's turn waits before it starts, so that a test can kill
        # the process between the message's append and its turn (never set in production).
        self._stall = asyncio.Event() if os.environ.get(STALL_TURN_ENV) == "1" else None
        self.hooks = Hooks()
        self.commands = CommandRegistry(self.hooks)
        register_builtins(self.commands, settings.model, settings.selectable)
        register_unresolved_rule(self.hooks)
        self.moves = Moves(self.hooks)
        # message.received: a gate of the engine once attached (attach_engine)
        self.hearing = received.Hearing(self.hooks)
        self._completion = Completion(self.hooks, self.moves)
        self._participants = ParticipantChanges(self.hooks, self.moves)
        self._names: frozenset[str] = frozenset()
        self._steps = Steps(self.hooks, settings.max_steps, Compactor(settings.context_tokens))
        self._files: MediaFiles | None = None  # the tasks' files, when media is on
        self._mcp = [McpServer(server) for server in settings.mcp]
        self._hook_servers: list[McpServer] = []  # plugins' MCP hooks' servers
        self._tools: ToolSet | None = None
        # Plugins' prompts (the system prompt and named prompts) and skills.
        self.prompts = Prompts(settings.system_prompt)
        self.skills = SkillLibrary()
        # Python function tools (plugins add theirs before the agent serves)
        self.extra_tools: list[Tool] = []
        # Channels and help requests; messages for agent participants are delivered by a
        # dispatcher once an engine is attached (attach_engine).
        self.roster = Roster(
            settings.agents, timeout_s=settings.delivery.timeout_s, participant=settings.agent_id
        )
        self.channels = Channels(
            self.hooks, self.moves, settings.agent_id, self.roster.ids, hearing=self.hearing
        )
        self._dispatcher: ChannelDispatcher | None = None
        self._owed: OwedScan | None = None
        # Sub-tasks: made in turns (spawn_subtask, create_task_for_participant) and followed
        # beside the engine once it is attached (attach_engine).
        self.delegation = Delegation(
            self.hooks, self.moves, settings.agent_id, self.roster.ids, settings.bounds
        )
        self._follower: Follower | None = None
        self._command_runner = CommandRunner(
            self.commands, self.moves, self.delegation, settings.selectable
        )
        self._command_runner.retry = self._retry

    def freeze(self) -> None:
        """No more hooks or commands: the harness serves from here on."""
        if not self.commands.frozen:
            self.commands.freeze()
            self.hooks.freeze()
            self._names = self.commands.names

    # --- the card ------------------------------------------------------------------------

    def card_extensions(self) -> list[AgentExtension]:
        self.freeze()
        return [
            AgentExtension(
                uri=TASK_URI,
                required=False,
                description="the harness's task data in Task.metadata (participants, roles)",
            ),
            AgentExtension(
                uri=STATUS_URI,
                required=False,
                description="why a task is INPUT_REQUIRED (sub_state) in metadata",
            ),
            AgentExtension(
                uri=CHANNEL_URI,
                required=False,
                description="channels of a task's participants, help requests and replies",
            ),
            AgentExtension(
                uri=COMMANDS_URI,
                required=False,
                description="/commands a message may run instead of a turn",
                params=self.commands.card_params(),
            ),
            a2ui.card_extension(),
        ]

    input_modes = INPUT_MODES
    output_modes = OUTPUT_MODES

    def attach_media(self, files: MediaFiles) -> None:
        """Media is on: images of participants' messages go to the model as images, text
        files as text (accord.harness._media)."""
        self._files = files

    def attach_engine(self, engine: Host) -> None:
        """Work beside ``engine``: follow sub-tasks (their parents' turns, relayed questions,
        cascades, children on other agents) and deliver channel messages to the roster's
        agents from its store; both start and stop with the engine. Its gate judges every
        participant's message with the ``message.received`` hooks before it is stored."""
        self.hearing.attach(engine.store, self._heard_as)
        engine.add_gate(self.hearing)
        self._follower = Follower(
            engine,
            self.settings.agent_id,
            self.roster,
            self.channels,
            self.settings.delivery,
            push_url=self.settings.push_url,
        )
        self.delegation.attach(engine, self._follower)
        engine.add_commit_listener(self._follower.committed)
        engine.add_remote_listener(self._follower.committed)  # (other nodes' changes)
        # Channel messages a dead process stored and did not handle: handled once the
        # engine's recovery has given back the turns it cut.
        self._owed = OwedScan(engine, self._owed_run)
        engine.on_start(self._start_owed_scan)
        if not self.roster.ids:
            return
        self._dispatcher = ChannelDispatcher(
            engine.store,
            channel_outbox(engine.store),
            self.roster,
            self.settings.agent_id,
            self.settings.delivery,
        )
        engine.add_commit_listener(self._dispatcher.committed)

    async def _start_owed_scan(self) -> None:
        if self._owed is not None:
            self._owed.start()

    def _owed_run(self, task: Task, messages: list[Message]) -> ExecutorFunction:
        """The run that handles ``messages`` of ``task`` (owed their handling), in order."""

        async def run(ctx: RequestContext, handle: TaskHandle) -> None:
            for message in messages:
                current = await handle.current()
                here = dataclasses.replace(ctx, message=message, task=current)
                await self._owed_handler(current, message)(here, handle)

        return run

    def _owed_handler(self, task: Task, message: Message) -> ExecutorFunction:
        """A stored message's handler, judged again on the task as it is now."""
        if owes_turn(message):
            return self._owed_turn
        try:
            judged = self.channels.judge(task, message, claimed(message) or "")
        except A2AError as refusal:  # (its sender left the channel meanwhile, say)
            return self.channels.refusing(refusal.message)
        if judged is None:  # a plain reply whose request went away meanwhile
            told = "no help request is waiting for your answer; your message is recorded"
            judged = Judged(None, message, told=told)
        return self.channels.handler(judged, self._heard_turn)

    def inbound_endpoint(self, max_body: int) -> Doorbell | None:
        """The endpoint the agents it delegates to push to (``/harness/push/…``), bodies of
        at most ``max_body`` bytes; None without ``push_url`` or an engine."""
        if not self.settings.push_url or self._follower is None:
            return None
        return Doorbell(self._follower.engine, self._follower, max_body)

    # --- intake and access ---------------------------------------------------------------

    def intake(self, request: SendMessageRequest, task: Task | None, caller: Caller) -> Verdict:
        self.freeze()
        sender = identity.sender(
            caller, request.message, self.settings.agent_id, task.id if task else None
        )
        judgement = judge(task, request.message, sender, self.policy)
        a2ui.client_events(judgement.message, task)  # (actions: on this task's surfaces)
        call = parse_command(judgement.message, self._names)
        own = sender == self.settings.agent_id and is_harness(caller)
        message = _marked(judgement.message, call, own)
        judged = self.channels.judge(task, message, sender) if call is None else None
        if judged is not None:  # a channel message, or the answer to a help request
            return Divert(self.channels.handler(judged, self._heard_turn), message=judged.message)
        if isinstance(judgement, Complete):
            return Divert(self._completion.handler(judgement.requested_by), True, judgement.message)
        if isinstance(judgement, Start):
            # (a command as a new conversation's first message runs in execute: the engine
            # diverts only a message that continues a task)
            base = metadata_with(without_harness_keys(request.metadata), judgement.extension)
            return Admit(message, _with_channels(base, message, "", judgement.extension))
        assert task is not None and isinstance(judgement, Continue)
        if call is not None:
            return Divert(partial(self._command_runner.run, call=call), message=message)
        previous = extension_of(task)
        current = task.metadata if task.metadata is not UNSET else {}
        channels = _with_channels(current, message, task.id, judgement.extension)
        # (an admitted message is stored marked: a crash before its turn starts owes it one)
        admitted = owed_message(message, OWED_TURN) if _owes_turn(task) else message
        if judgement.extension == previous and channels is current:
            return Admit(admitted)
        assert previous is not None
        if judgement.extension.participants != previous.participants and self.hooks.wants(
            PARTICIPANT_CHANGED
        ):
            return Divert(self._participants.handler(self.execute), message=message)
        return Admit(admitted, metadata_with(channels, judgement.extension))

    def canceled_metadata(self, task: Task) -> dict[str, Any] | None:
        """The task's metadata as its cancel leaves it (the engine's CancelRecord seam): its
        references to the sub-tasks not ended yet say CANCELED, as the cascade that follows
        leaves them (a canceled task never changes again); None when none is open."""
        extension = extension_of(task)
        if extension is None:
            return None
        ended = ended_with(extension)
        if ended == extension:
            return None
        return metadata_with(task.metadata if isinstance(task.metadata, dict) else {}, ended)

    def _heard_as(
        self, request: SendMessageRequest, task: Task | None, caller: Caller
    ) -> tuple[Message, Who] | None:
        """What ``message.received`` judges before a message is stored: the message as it
        is to be stored (a command, a completion, a channel message … every message a
        participant sends) and whom for; None for a message intake refuses (the decision
        refuses it the same way, and a stranger learns nothing) and for the harness's own
        (a sub-task's end told its parent: judged in its turn)."""
        try:
            verdict = self.intake(request, task, caller)
            sender = identity.sender(
                caller, request.message, self.settings.agent_id, task.id if task else None
            )
            # (the sender's role: on the task, or on the task the message starts)
            started = judge(None, request.message, sender, self.policy) if task is None else None
        except A2AError:
            return None
        if sender == self.settings.agent_id and is_harness(caller):
            return None
        extension = extension_of(task) if task is not None else None
        if isinstance(started, Start):
            extension = started.extension
        message = verdict.message if verdict.message is not None else request.message
        return message, Who.on(extension, sender, message.message_id)

    def subscribe_replay(self, task: Task) -> int:
        """How much of a task's log SubscribeToTask replays after the Task (the engine's
        ReplaysOnSubscribe): a harness task's, as tiny-harness's server replays it."""
        return SUBSCRIBE_REPLAY if extension_of(task) is not None else 0

    def access(self, operation: Access, task: Task, caller: Caller) -> None:
        extension = extension_of(task)
        if extension is None:
            return
        reader = identity.reader(caller, self.settings.agent_id)
        role = extension.role_of(reader) if reader is not None else None
        if role is None:
            raise task_not_found(task.id)
        if operation == "cancel":
            refuse_watcher(role, "cancel")

    # --- turns ---------------------------------------------------------------------------

    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None:
        await self._execute(ctx, task)

    async def _owed_turn(self, ctx: RequestContext, task: TaskHandle) -> None:
        """The turn of a plain message a dead process stored and did not start: run once,
        while the task still owes it (no turn of a later message answered it meanwhile)."""
        if ctx.task_id in self._turns or not any(
            m.message_id == ctx.message.message_id for m in owed(await task.current())
        ):
            return
        await self._execute(ctx, task)

    async def _heard_turn(self, ctx: RequestContext, task: TaskHandle) -> None:
        """The turn of a channel message (or reply) whose handler ran the hooks on it."""
        await self._execute(ctx, task, heard=True)

    async def _execute(self, ctx: RequestContext, task: TaskHandle, heard: bool = False) -> None:
        call = self._stored_command(ctx.message)
        if call is not None:  # a new conversation's first message, a command
            await self._command_runner.run(ctx, task, call)
            return
        extension = extension_of(ctx.task) if ctx.task is not None else None
        if extension is not None and ctx.task is not None:
            info = info_of(ctx.task)
            if info is not None and info.remote is not None:
                return  # a stand-in: its follow passes the message on to the remote task
            if is_participant_task(extension, self.settings.agent_id):
                await self._participant_task(ctx, task, extension)
                return
        while (running := self._turns.get(ctx.task_id)) is not None:
            # This message joins the turn running here. A turn making its last writes takes
            # no more messages: one that comes then is left over, and has a turn of its own
            # once that one is done (the first left over runs it, the others join it).
            running.incoming.append(ctx.message)
            if heard:
                running.heard.add(ctx.message.message_id)
            await running.done.wait()
            if not any(message is ctx.message for message in running.incoming):
                return
        with self._running(ctx.task_id) as turn:
            if self._stall is not None and owes_turn(ctx.message):
                log.info("turn of message %s stalled at its start", ctx.message.message_id)
                await self._stall.wait()  # (tests only: a crash between append and turn)
            # (accord.telemetry: counted, and a GenAI invoke_agent span with tracing on)
            with telemetry.turn(
                self.settings.agent_id, conversation_id=ctx.context_id, task_id=ctx.task_id
            ):
                await self._run(ctx, task, turn, heard)

    @contextmanager
    def _running(self, task_id: str) -> Iterator[_Turn]:
        """A turn running on ``task_id`` in this process, while the block runs: messages
        that come meanwhile join it."""
        turn = self._turns[task_id] = _Turn()
        try:
            yield turn
        finally:
            del self._turns[task_id]
            turn.done.set()

    async def cancel(self, ctx: RequestContext, task: TaskHandle) -> None:
        return None  # the engine cuts the run; the task's state is the canceller's

    async def _participant_task(
        self, ctx: RequestContext, task: TaskHandle, extension: TaskExtension
    ) -> None:
        """A task assigned to a participant runs no turn: their message completes it (its
        text is the result its parent reads); anyone else's is noted."""
        sender = claimed(ctx.message) or ""
        who = Who.on(extension, sender, ctx.message.message_id)
        assignee = assignee_of(extension)
        if sender == assignee:
            done = f"completed by {sender}: {ctx.message.text() or '(no text)'}"
            await self.moves.decide(task, partial(conversation.complete_with, text=done), who)
            return
        noted = f"Noted. This task waits for {assignee}."
        await self.moves.decide(
            task,
            lambda rec, now: conversation.say(rec, now, conversation.agent_text(rec, noted)),
            who,
        )

    async def _run(
        self, ctx: RequestContext, task: TaskHandle, turn: _Turn, heard: bool = False
    ) -> None:
        current = await task.current()
        extension = extension_of(current)
        if extension is None:
            await task.fail("this task carries no harness data; it cannot run here")
            return
        who = Who.on(extension, claimed(ctx.message) or "", ctx.message.message_id)
        if ctx.task is None and _only_envelope(ctx.message):
            # A brief and nothing else: the task waits for its first message.
            await self.moves.decide(task, conversation.park, who)
            return
        if not await self._start(task, ctx.message, who, heard):
            return
        view = await self._turn_view(task, extension, who)
        if view is not None:
            await self._answer_turn(ctx, task, turn, view, extension, who)

    async def _turn_view(
        self, task: TaskHandle, extension: TaskExtension, who: Who
    ) -> Conversation | None:
        """The turn's view of the task, as ``turn.started`` leaves it (None: a hook refused
        the turn, which is over)."""
        view = self._conversation(await task.current(), extension)
        if not self.hooks.wants(TURN_STARTED):
            return view
        try:
            return await self._started(view, who)
        except HookAbort as abort:
            await self._end(task, TURN_REFUSED + abort.message, who)
            return None

    async def _answer_turn(
        self,
        ctx: RequestContext,
        task: TaskHandle,
        turn: _Turn,
        view: Conversation,
        extension: TaskExtension,
        who: Who,
        journal: Journal | None = None,
    ) -> None:
        """Model steps (and tools) until an answer; then the task parks with it, or the turn
        goes on with the messages that joined it meanwhile."""
        # (the turn's journal entries carry its key: its first message's id, or the key a
        # resumed turn's journal names)
        key = journal.turn if journal is not None else ctx.message.message_id
        step = journal.first_step if journal is not None else 0
        tools = await self.skills.turn_tools(self._turn_tools(), view.task)
        while True:
            model = self._model(view)
            view = await with_files(view, self._files, ctx.tenant)
            try:
                answered = await self._steps.run(
                    task, view, model, tools, key, who, journal, first_step=step
                )
            except ModelError as error:
                # The turn ends, never the conversation; its journal keeps what was done.
                turn.incoming.clear()  # (messages that joined it wait, parked, for the next)
                await self._model_failed(task, view, error, who, key)
                return
            step += answered.calls
            if answered.seen is not None:
                # A resumed turn's answer from its journal: the participants' messages that
                # came after the call that gave it (they joined the cut turn) are answered
                # next, as messages that join a turn are.
                later = (await task.current()).history[answered.seen :]
                turn.incoming.extend(m for m in later if m.role is Role.USER)
            if answered.ended:  # a tool ended the turn (it asked a participant: parked)
                if not await self._take_joined(task, turn):
                    return
                # Messages came in meanwhile: a turn of their own, answered here.
                await self.moves.start_turn(task, who)
                fresh = self._conversation(await task.current(), extension)
                view = dataclasses.replace(
                    fresh, model=view.model, reasoning_effort=view.reasoning_effort
                )
                continue
            entry = answered.entry  # (its journal entry, when it is not durable yet)
            if entry is not None and (turn.incoming or self.hooks.wants(TURN_FINISHED)):
                # (hooks act on the answer, or the turn goes on: durable before that)
                await task.journal(entry)
                entry = None
            more = await self._take_joined(task, turn)
            text = answered.text
            if self.hooks.wants(TURN_FINISHED):
                try:
                    text = await self._finished(view, text, not more, who)
                except HookAbort as abort:
                    text = ANSWER_WITHHELD + abort.message
                more = await self._take_joined(task, turn) or more
            answer = self._answer(
                ctx,
                view.model_calls + answered.calls - 1,
                text,
                answered.used,
                answer_id(key, step - 1),
                answered.answers,
            )
            if more:  # messages came in while the model worked: answer them too
                if entry is not None:  # (none: it was journaled above, as messages joined)
                    await task.journal(entry)
                await task.start_working(answer)
                fresh = self._conversation(await task.current(), extension)
                # (the model and effort the turn started with stay)
                view = dataclasses.replace(
                    fresh, model=view.model, reasoning_effort=view.reasoning_effort
                )
                continue
            # One append: the answer's journal entry (when not durable yet) and the turn's end
            ended = journaled(entry, partial(conversation.end_turn, answer=answer), task.task_id)
            await self.moves.decide(task, ended, who)
            return

    async def resume(self, ctx: RequestContext, task: TaskHandle) -> None:
        """A turn a dead process left running (the engine's recovery): it goes on from its
        journal, so no answered model call is made again and no journaled tool runs twice."""
        if ctx.task_id in self._turns:
            return
        with self._running(ctx.task_id) as turn:
            current = await task.current()
            extension = extension_of(current)
            if extension is None:
                await task.fail("this task carries no harness data; it cannot run here")
                return
            # The cut turn's journal: what it wrote since the task last moved into WORKING,
            # whichever message started it (messages that joined it, or came since, do not
            # change its key).
            entries = await task.journal_entries(since_working=True)
            if current.status.state is TaskState.SUBMITTED and not entries:
                # A task the harness opened with its first message (a sub-task's brief):
                # its first turn, as for any message.
                await self._run(ctx, task, turn)
                return
            who = Who.on(extension, claimed(ctx.message) or "", ctx.message.message_id)
            if current.status.state is not TaskState.WORKING:
                await self.moves.start_turn(task, who)
            try:
                journal = _journal(current, entries, ctx.message.message_id)
            except JournalError as unreadable:  # (a newer accord's journal, say)
                await task.fail(f"this turn cannot resume from its journal: {unreadable}")
                return
            view = self._conversation(await task.current(), extension)
            await self._answer_turn(ctx, task, turn, view, extension, who, journal)

    async def _retry(self, ctx: RequestContext, task: TaskHandle) -> None:
        """``/retry``: the turn a model's failure ended runs again from its journal (the
        model answers and tool results it had are used as they are, nothing done is done
        again), answering the messages it answered and those that came since."""
        if ctx.task_id in self._turns:
            return
        with self._running(ctx.task_id) as turn:
            current = await task.current()
            extension = extension_of(current)
            if extension is None:
                return
            who = Who.on(extension, claimed(ctx.message) or "", ctx.message.message_id)
            # The failed turn's journal: its entries, by its key
            key = failure.failed_turn(current)
            entries = [
                (seq, data)
                for seq, data in (await task.journal_entries() if key else [])
                if data.get("turn") == key
            ]
            try:
                journal = _journal(current, entries, ctx.message.message_id)
            except JournalError:  # (a journal this accord cannot read: afresh)
                journal = Journal(turn=f"{ctx.message.message_id}~{os.urandom(4).hex()}")
            await self.moves.start_turn(task, who)
            view = await self._turn_view(task, extension, who)
            if view is None:
                return
            with telemetry.turn(
                self.settings.agent_id, conversation_id=ctx.context_id, task_id=ctx.task_id
            ):
                await self._answer_turn(ctx, task, turn, view, extension, who, journal)

    # --- tools and their servers -----------------------------------------------------------

    def _turn_tools(self) -> ToolSet:
        """The tools a turn offers: the harness's own, the MCP servers', the plugins'."""
        if self._tools is None:
            own: tuple[Tool, ...] = (
                *INTRINSICS,
                a2ui.EmitUi(),
                AskParticipant(self.channels),
                SpawnSubtask(self.delegation),
                CreateTaskForParticipant(self.delegation),
            )
            self._tools = ToolSet((*own, *self.extra_tools))
            for server in self._mcp:
                for tool in server.tools:
                    self._tools.add(tool)
        return self._tools

    def add_mcp_server(self, settings: McpServerSettings, *, offered: bool = True) -> McpServer:
        """A plugin's MCP server, connected as the engine starts: its tools are offered to
        the model as ``<server>_<tool>`` (``offered``), or it serves a hook."""
        if offered and any(server.settings.name == settings.name for server in self._mcp):
            raise ValueError(f"an MCP server named {settings.name!r} is there already")
        server = McpServer(settings)
        (self._mcp if offered else self._hook_servers).append(server)
        return server

    async def startup(self) -> None:
        """The MCP servers connect as the engine starts (one that cannot stops the start,
        naming it)."""
        self.freeze()
        if self.hooks.wants(MESSAGE_RECEIVED) and not self.hearing.attached:
            raise ValueError(
                "the harness's message.received hooks judge messages before they are stored, "
                "in a gate of its engine: attach it first (agent.attach_engine(engine), as "
                "accord serve does)"
            )
        for server in (*self._mcp, *self._hook_servers):
            try:
                await server.start()
            except Exception as exc:
                where = server.settings.origin
                raise ValueError(
                    f"{where} {server.settings.name!r}: cannot connect: {exc}"
                ) from exc
        self._turn_tools()  # (two tools of one name stop the start, not a turn)
        if self._dispatcher is not None:
            await self._dispatcher.start()
        if self._follower is not None:
            await self._follower.start()

    async def shutdown(self) -> None:
        if self._owed is not None:
            await self._owed.stop()
        if self._follower is not None:
            await self._follower.stop()
        if self._dispatcher is not None:
            await self._dispatcher.stop()
        for server in (*self._mcp, *self._hook_servers):
            await server.stop()
        await self.skills.stop()
        if isinstance(self._model_factory, ModelFactory):
            await self._model_factory.aclose()

    async def _receive(self, task: TaskHandle, message: Message, who: Who) -> Message | None:
        """``message.received`` on a participant's message: the message as the model is to
        see it, or None when it is refused (the sender is told)."""
        try:
            return await self.hearing.judge(task.task_id, message, who)
        except HookAbort as abort:
            refusal = partial(received.refusal, message_id=message.message_id, reason=abort.message)
            await self.moves.decide(task, refusal, who)
            return None

    async def _start(
        self, task: TaskHandle, message: Message, who: Who, heard: bool = False
    ) -> bool:
        """The turn starts with ``message`` (False: a hook refused it): WORKING, with what
        the hooks replaced recorded before the model is asked (``heard``: its handler did
        that already)."""
        seen = message
        if self.hooks.wants(MESSAGE_RECEIVED) and not heard:
            # (hooks act outside accord: the message is stored first, not with WORKING)
            await task.flush()
            judged = await self._receive(task, message, who)
            if judged is None:
                if (await task.current()).status.state is TaskState.WORKING:
                    # (started by a participant change this message made): the turn ends
                    await self.moves.decide(task, conversation.park, who)
                return False
            seen = judged
        if (await task.current()).status.state is not TaskState.WORKING:
            await self.moves.start_turn(task, who)  # (a hooked participant change started it)
        if seen is not message:
            await task.decide(partial(received.replaced, message=seen))
        if self.hooks.wants(TURN_STARTED) or self.hooks.wants(LLM_INVOKED):
            await task.flush()  # (hooks act outside accord: they see the turn's message stored)
        return True

    async def _take_joined(self, task: TaskHandle, turn: _Turn) -> bool:
        """Whether messages joined the turn (and, with ``message.received`` hooked, any of
        them was accepted)."""
        joined, turn.incoming = turn.incoming, []
        if not joined or not self.hooks.wants(MESSAGE_RECEIVED):
            return bool(joined)
        accepted = False
        for message in joined:
            if message.message_id in turn.heard:  # (its handler judged it)
                turn.heard.discard(message.message_id)
                accepted = True
                continue
            current = await task.current()
            who = Who.on(extension_of(current), claimed(message) or "", message.message_id)
            seen = await self._receive(task, message, who)
            if seen is not None and seen is not message:
                await task.decide(partial(received.replaced, message=seen))
            accepted = accepted or seen is not None
        return accepted

    async def _started(self, view: Conversation, who: Who) -> Conversation:
        """``turn.started``: the hooks may choose another selectable model or effort."""
        context = TurnStarted(
            **who.fields(view.task_id), model=view.model, reasoning_effort=view.reasoning_effort
        )
        context = await self.hooks.perform(TURN_STARTED, context)
        if context.model not in self.settings.selectable:
            raise HookAbort(f"model {context.model!r} is not selectable", "invalid")
        return dataclasses.replace(
            view, model=context.model, reasoning_effort=context.reasoning_effort
        )

    async def _finished(self, view: Conversation, text: str, final: bool, who: Who) -> str:
        """``turn.finished``: the hooks may replace the answer's text."""
        context = TurnFinished(**who.fields(view.task_id), model=view.model, text=text, final=final)
        context = await self.hooks.perform(TURN_FINISHED, context)
        return context.text

    async def _model_failed(
        self, task: TaskHandle, view: Conversation, error: ModelError, who: Who, key: str
    ) -> None:
        """A model call failed after its adapter's retries: the conversation parks (a
        delegated task fails) saying what failed and what to do."""
        model = error.model or view.model
        line = failure_line(error.reason, model, error.detail)
        log.warning("task %s: turn ended: %s [%s]", view.task_id, line, error.reason)
        decision = partial(
            failure.model_failed, line=line, reason=error.reason, model=model, turn=key
        )
        await self.moves.decide(task, decision, who)

    async def _end(self, task: TaskHandle, reason: str, who: Who) -> None:
        """The turn ends without the model: parked with ``reason``."""
        await self.moves.decide(task, partial(conversation.park, message=reason), who)

    def _conversation(self, task: Task, fallback: TaskExtension) -> Conversation:
        extension = extension_of(task) or fallback
        return Conversation(
            task=task,
            extension=extension,
            agent_id=self.settings.agent_id,
            entries=entries(task, self.settings.agent_id),
            model_calls=model_calls(task),
            model=extension.model or self.settings.model,
            reasoning_effort=extension.reasoning_effort,
            # (the system prompt, the skills' index, the task's loaded skills)
            system_prompt=self.skills.prefix(self.prompts.system_prompt, task),
        )

    def check_models(self) -> None:
        """Build every selectable model now, so that a bad one stops the server at start
        (ValueError naming it), not a conversation later."""
        for name in self.settings.selectable:
            if name not in self._models:
                try:
                    self._models[name] = self._model_factory(name)
                except ValueError as exc:
                    key = "model" if name == self.settings.model else "models"
                    raise ValueError(f"{self.settings.where}.{key}: {exc}") from None

    def _model(self, view: Conversation) -> Model:
        model = self._models.get(view.model)
        if model is None:
            model = self._models[view.model] = self._model_factory(view.model)
        return model

    def _stored_command(self, message: Message) -> CommandCall | None:
        metadata = message.metadata
        if not isinstance(metadata, dict) or COMMAND_METADATA not in metadata:
            return None
        return parse_command(message, self._names)

    @staticmethod
    def _answer(
        ctx: RequestContext,
        call: int,
        text: str,
        used: Mapping[str, Usage] | None = None,
        message_id: str = "",
        answers: int | None = None,
    ) -> Message:
        """The turn's answer, numbered with the model call that gave it, with the tokens the
        turn's model calls took (when the model said); ``message_id``: its stretch's
        (steps.answer_id), so that a resumed turn knows it was given; ``answers``: the task's
        first messages it answers, whom it follows in the history (messages that came while
        the model wrote it come after it)."""
        metadata: dict[str, Any] = {MODEL_CALL_KEY: call}
        if answers is not None:
            metadata[AFTER_KEY] = answers
        if used:
            metadata[usage.USAGE_KEY] = usage.metadata_of(used)
        return Message(
            message_id=message_id or os.urandom(16).hex(),
            role=Role.AGENT,
            parts=[Part(text=text or NO_TEXT)],  # (never an empty text part)
            task_id=ctx.task_id,
            context_id=ctx.context_id,
            metadata=metadata,
        )


def _journal(task: Task, entries: list[tuple[int, dict[str, Any]]], message_id: str) -> Journal:
    """The journal a turn of ``task`` goes on from: that of ``entries`` (a stretch whose
    answer the task has is over), or a fresh one under a key no turn used (from
    ``message_id``, the message that runs it); JournalError: an entry this accord cannot
    read."""
    given = {m.message_id for m in task.history if m.role is Role.AGENT}
    return Journal.resumed(entries, f"{message_id}~{os.urandom(4).hex()}", given)


def _marked(message: Message, call: CommandCall | None, own: bool = False) -> Message:
    """The message as stored: a command names itself in its metadata (the model never sees
    it, nor its reply); no participant's message carries the harness's own marks (it could
    hide itself from the model, or move a scripted model's place) — only the harness's own
    (``own``: a sub-task's end it tells a parent) keeps them."""
    metadata = message.metadata if isinstance(message.metadata, dict) else {}
    forged = [
        key
        for key in metadata
        if key == COMMAND_METADATA or (key.startswith(ACCORD_PREFIX) and not own)
    ]
    if call is None and not forged:
        return message
    kept = {key: value for key, value in metadata.items() if key not in forged}
    if call is not None:
        kept[COMMAND_METADATA] = call.name
    return msgspec.structs.replace(message, metadata=kept)


def _with_channels(
    metadata: dict[str, Any], message: Message, task_id: str, extension: TaskExtension
) -> dict[str, Any]:
    """``metadata`` with the channels a task envelope of ``message`` sets (``metadata``
    itself when it sets none)."""
    found = envelopes.find(message)
    if found is None or found.kind != "task":
        return metadata
    field = f"{found.field}.payload"
    changed = channels_changed_by(metadata, found.payload, field, task_id, extension)
    return metadata if changed is None else changed


def _owes_turn(task: Task) -> bool:
    """Whether a plain message to ``task`` is owed its turn (its handling) from its append
    on: the task is parked, and not a stand-in (whose follow passes messages on)."""
    if task.status.state not in lifecycle.INTERRUPTED:
        return False  # (a running turn reads it; a resumed one too)
    info = info_of(task)
    return info is None or info.remote is None


def _only_envelope(message: Message) -> bool:
    found = envelopes.find(message)
    return found is not None and len(message.parts) == 1 and found.kind == "task"


__all__ = ["EVENT_MEDIA_TYPE", "HarnessAgent"]
