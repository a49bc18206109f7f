"""The operations hooks run on, and each one's context.

:data:`OPERATIONS` is the catalogue: an operation's name, its context type and a line on
when it fires (docs/harness.md lists the same). Later parts of the harness add theirs with
:func:`register_operation` (``llm.invoked``, ``tool.invoked`` …): a hook point is known
once its operation is registered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from accord.harness._wire import Effort, Participant, TaskRef
from accord.harness.hooks._base import Context, Phase, point


@dataclass(frozen=True, slots=True)
class Operation:
    name: str
    context: type[Context]
    fires: str  # when, in a line

    @property
    def points(self) -> tuple[str, str, str]:
        """Its pre, in and post points."""
        return (
            point(self.name, Phase.PRE),
            point(self.name, Phase.IN),
            point(self.name, Phase.POST),
        )


OPERATIONS: dict[str, Operation] = {}


def register_operation(name: str, context: type[Context], fires: str) -> Operation:
    """Add an operation to the catalogue (ValueError when the name is taken)."""
    if name in OPERATIONS:
        raise ValueError(f"hook operation {name!r} is registered already")
    operation = OPERATIONS[name] = Operation(name, context, fires)
    return operation


# --- message.received -------------------------------------------------------------------


class MessageReceived(Context, frozen=True, kw_only=True):
    """An ordinary message from a participant, as A2A JSON (``parts``, ``messageId`` …);
    a replacement is what the model sees instead."""

    message: dict[str, Any]


# --- command.invoked ----------------------------------------------------------------------


class CommandSettings(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A task's model settings; None: as they are (the harness's default)."""

    model: str | None = None
    reasoning_effort: Effort | None = None


class SpawnIntent(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Create a child conversation with this goal."""

    goal: str


class CommandResult(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """What a command answered: the reply's text, and the changes the harness is to make
    (each checked: a model outside the allowlist changes nothing)."""

    reply: str
    settings: CommandSettings | None = None
    spawn: SpawnIntent | None = None
    # Run the task's last turn again (``/retry``: a model's failure ended it); the turn's
    # answer is the reply, ``reply`` is not sent
    retry: bool = False


class ChildSnapshot(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    task_id: str
    state: str  # without the TASK_STATE_ prefix
    agent: str | None = None  # the roster agent it runs on (None: this harness)
    sub_state: str | None = None


class TokenCounts(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Tokens model calls took: in (of which cached) and out."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0


class TaskSnapshot(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """What a command may know of its task."""

    id: str
    name: str
    state: str  # without the TASK_STATE_ prefix
    sub_state: str | None = None
    settings: CommandSettings = CommandSettings()
    steps_done: int = 0
    steps_total: int = 0
    children: tuple[ChildSnapshot, ...] = ()
    participants: tuple[Participant, ...] = ()
    # The kind of model failure that ended the last turn (model_unavailable …), while the
    # task is parked on it
    failure: str | None = None
    # The tokens of the last turn's model calls (None: no model call yet) and of all the
    # task's, each call counted once (accord.harness._usage)
    usage_last_turn: TokenCounts | None = None
    usage_total: TokenCounts = TokenCounts()


class CommandInvoked(Context, frozen=True, kw_only=True):
    """``/<name> <arguments>``: ``arguments`` is the text after the name; ``args`` the
    declared arguments once checked (from ``in`` on); ``result`` the answer (``in``)."""

    name: str
    arguments: str = ""
    args: dict[str, Any] = {}
    task: TaskSnapshot
    result: CommandResult | None = None


# --- turns ----------------------------------------------------------------------------------


class TurnStarted(Context, frozen=True, kw_only=True):
    """A turn about to ask the model; a replacement may choose another selectable model or
    effort for this turn."""

    model: str
    reasoning_effort: Effort | None = None


class TurnFinished(Context, frozen=True, kw_only=True):
    """The model's answer, before it is stored; ``final`` is false when messages arrived
    while the model worked and the turn goes on with them."""

    model: str
    text: str
    final: bool = True


# --- completion and changes ----------------------------------------------------------------

Decision = Literal["wait", "complete", "fail"]


class TaskComplete(Context, frozen=True, kw_only=True):
    """A participant asks to complete the task. ``unresolved``: the sub-tasks not ended;
    ``result`` the decision (``in``; the built-in body waits while any is unresolved) and
    ``reason`` why it is not ``complete``."""

    unresolved: tuple[TaskRef, ...] = ()
    result: Decision | None = None
    reason: str = ""
    requested_by: str | None = None


class TaskStateChanged(Context, frozen=True, kw_only=True):
    """The task moved (durable already): from ``previous`` to ``state`` (names without the
    TASK_STATE_ prefix), with the status message's text and the sub-state."""

    previous: str
    state: str
    sub_state: str | None = None
    text: str = ""


class ParticipantChanged(Context, frozen=True, kw_only=True):
    """An admin's task envelope changes the participants or their roles: ``participants``
    is the list asked for (a replacement in ``pre`` or ``in`` is what is stored)."""

    previous: tuple[Participant, ...]
    participants: tuple[Participant, ...]


# --- channels and help requests -----------------------------------------------------------


class HelpRequested(Context, frozen=True, kw_only=True):
    """The harness is about to ask ``participant_id`` for help on ``channel_id``; a
    replacement asks another ``question`` with other ``options`` (of the same participant)."""

    participant_id: str
    channel_id: str
    question: str
    options: tuple[str, ...] = ()


class HelpAnswered(Context, frozen=True, kw_only=True):
    """A reply from its addressee answers the help request ``request_id`` and is about to
    resume the task (``sender`` is the addressee)."""

    request_id: str
    question: str
    reply: str


class ChannelSent(Context, frozen=True, kw_only=True):
    """The harness is about to send a channel message (a help request too); a replacement
    sends another ``text``. ``recipients``: the agent participants it is delivered to."""

    channel_id: str
    kind: str
    text: str
    in_reply_to: str | None = None
    recipients: tuple[str, ...] = ()


class ChannelReceived(Context, frozen=True, kw_only=True):
    """A participant's channel message reached the harness (a member of its channel), stored
    and delivered already, before the harness acts on it."""

    channel_id: str
    kind: str
    text: str
    in_reply_to: str | None = None


MESSAGE_RECEIVED = register_operation(
    "message.received",
    MessageReceived,
    "in the turn, for each ordinary participant message, before the model sees it",
)
COMMAND_INVOKED = register_operation(
    "command.invoked", CommandInvoked, "a command message, instead of a turn"
)
TURN_STARTED = register_operation(
    "turn.started", TurnStarted, "a turn, once WORKING, before its first model call"
)
TURN_FINISHED = register_operation(
    "turn.finished", TurnFinished, "each answer of the model, before it is stored"
)
TASK_COMPLETE = register_operation(
    "task.complete", TaskComplete, "a participant's completion, deciding it"
)
TASK_STATE_CHANGED = register_operation(
    "task.state_changed", TaskStateChanged, "after each state change the harness makes"
)
PARTICIPANT_CHANGED = register_operation(
    "participant.changed", ParticipantChanged, "an admin's change of participants or roles"
)


# --- sub-tasks ---------------------------------------------------------------------------


class SubtaskSpawned(Context, frozen=True, kw_only=True):
    """A sub-task of the task is being created (``pre``: before, a replacement changes its
    ``name``, ``goal``, ``description`` and ``acceptance_criteria``; ``in`` and ``post``:
    after, ``child_id`` set). ``kind`` is ``delegated`` (``spawn_subtask``: on this harness,
    or on roster agent ``agent``), ``participant`` (``create_task_for_participant``:
    assigned to ``assignee``) or ``conversation`` (``/sub-task``)."""

    kind: Literal["delegated", "participant", "conversation"]
    name: str
    goal: str
    description: str = ""
    acceptance_criteria: tuple[str, ...] = ()
    agent: str | None = None
    assignee: str | None = None
    child_id: str = ""


# --- model calls and tools (the model-driven turn) ------------------------------------------


class LlmInvoked(Context, frozen=True, kw_only=True):
    """One model call of a turn (``step`` counts them from 0). ``pre`` may refuse it (the
    turn parks, saying why); from ``post`` on, ``text`` and ``tool_calls`` are the answer, and
    a replacement is what the harness acts on (and journals)."""

    model: str
    step: int
    text: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()  # {"id", "name", "arguments"} each


class ToolInvoked(Context, frozen=True, kw_only=True):
    """One tool call the model asked for. ``pre`` may rewrite ``arguments`` or refuse the
    call (the model gets an error result, ``hook.abort: …``); from ``post`` on, ``content``
    and ``error`` are the tool's answer, and a replacement is what the model reads."""

    name: str
    call_id: str
    arguments: dict[str, Any] = {}
    idempotent: bool = False
    content: str = ""
    error: bool = False


LLM_INVOKED = register_operation("llm.invoked", LlmInvoked, "each model call of a turn, around it")
TOOL_INVOKED = register_operation(
    "tool.invoked", ToolInvoked, "each tool call the model asks for, around it"
)
HELP_REQUESTED = register_operation(
    "help.requested", HelpRequested, "the harness asks a participant, before the request is sent"
)
HELP_ANSWERED = register_operation(
    "help.answered", HelpAnswered, "a reply from its addressee answers a help request"
)
CHANNEL_SENT = register_operation(
    "channel.sent", ChannelSent, "the harness sends a channel message, before it is stored"
)
CHANNEL_RECEIVED = register_operation(
    "channel.received", ChannelReceived, "a participant's channel message reaches the harness"
)
SUBTASK_SPAWNED = register_operation(
    "subtask.spawned", SubtaskSpawned, "a sub-task is created: pre before, in and post after"
)
