"""Hooks: named operations with ``pre``, ``in`` and ``post`` phases, and the executors that
run on them (Python callables, remote ones over JSON-RPC, or an MCP server's tools). See
docs/harness.md, "Hooks".

::

    from accord.harness.hooks import HookAbort

    @agent.hooks.on("message.received.pre", priority=50)
    def no_shouting(point, context):
        if context.message["parts"][0].get("text", "").isupper():
            raise HookAbort("please do not shout", "policy")
"""

from accord.harness.hooks._base import (
    BODY_PRIORITY,
    DEFAULT_PRIORITY,
    PHASES,
    AbortReason,
    Context,
    Executor,
    FunctionExecutor,
    HookAbort,
    HookFailure,
    Phase,
    point,
)
from accord.harness.hooks._mcp_hook import McpHookExecutor
from accord.harness.hooks._operations import (
    CHANNEL_RECEIVED,
    CHANNEL_SENT,
    COMMAND_INVOKED,
    HELP_ANSWERED,
    HELP_REQUESTED,
    MESSAGE_RECEIVED,
    OPERATIONS,
    PARTICIPANT_CHANGED,
    SUBTASK_SPAWNED,
    TASK_COMPLETE,
    TASK_STATE_CHANGED,
    TURN_FINISHED,
    TURN_STARTED,
    ChannelReceived,
    ChannelSent,
    ChildSnapshot,
    CommandInvoked,
    CommandResult,
    CommandSettings,
    HelpAnswered,
    HelpRequested,
    MessageReceived,
    Operation,
    ParticipantChanged,
    SpawnIntent,
    SubtaskSpawned,
    TaskComplete,
    TaskSnapshot,
    TaskStateChanged,
    TokenCounts,
    TurnFinished,
    TurnStarted,
    register_operation,
)
from accord.harness.hooks._registry import FrozenError, Hooks, all_points

__all__ = [
    "BODY_PRIORITY",
    "CHANNEL_RECEIVED",
    "CHANNEL_SENT",
    "COMMAND_INVOKED",
    "DEFAULT_PRIORITY",
    "HELP_ANSWERED",
    "HELP_REQUESTED",
    "MESSAGE_RECEIVED",
    "OPERATIONS",
    "PARTICIPANT_CHANGED",
    "PHASES",
    "SUBTASK_SPAWNED",
    "TASK_COMPLETE",
    "TASK_STATE_CHANGED",
    "TURN_FINISHED",
    "TURN_STARTED",
    "AbortReason",
    "ChannelReceived",
    "ChannelSent",
    "ChildSnapshot",
    "CommandInvoked",
    "CommandResult",
    "CommandSettings",
    "Context",
    "Executor",
    "FrozenError",
    "FunctionExecutor",
    "HelpAnswered",
    "HelpRequested",
    "HookAbort",
    "HookFailure",
    "Hooks",
    "McpHookExecutor",
    "MessageReceived",
    "Operation",
    "ParticipantChanged",
    "Phase",
    "SpawnIntent",
    "SubtaskSpawned",
    "TaskComplete",
    "TaskSnapshot",
    "TaskStateChanged",
    "TokenCounts",
    "TurnFinished",
    "TurnStarted",
    "all_points",
    "point",
    "register_operation",
]
