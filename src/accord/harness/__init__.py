"""The harness: conversations that stay open between turns, with participants and roles,
completed by a participant's control message, answered by a model (decision 007; the
tiny-harness task and status extensions).

Serve it with ``accord serve --agent harness --config FILE`` (a ``[harness]`` table), or write
a conversation agent of your own with :func:`conversation_agent`::

    from accord.harness import Conversation, conversation_agent

    async def turn(conversation: Conversation) -> str:
        return f"{conversation.sender} said: {conversation.text}"

    agent = conversation_agent(turn)

and ``accord serve --agent mymodule:agent``. See docs/harness.md.

The names below are imported when first used, so that a client that only needs the wire's
constants (``accord.harness._wire``) does not load the agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from accord.harness import _lazy

if TYPE_CHECKING:
    from accord.harness._agent import HarnessAgent
    from accord.harness._build import conversation_agent, from_settings
    from accord.harness._membership import (
        PARTICIPANT_KINDS,
        PARTICIPANT_ROLES,
        participants_envelope,
        participants_of,
        with_participant,
        without_participant,
    )
    from accord.harness._settings import HarnessSettings, parse
    from accord.harness._step_events import STEP_MEDIA_TYPE, step_line
    from accord.harness._transcript import Conversation, Entry
    from accord.harness._usage import USAGE_KEY, call_id, calls_of, turn_of
    from accord.harness._wire import (
        CHANNEL_MEDIA_TYPE,
        COMMANDS_URI,
        EVENT_MEDIA_TYPE,
        PARTICIPANT_HEADER,
        STATUS_KEY,
        TASK_KEY,
        Role,
        SubState,
        TaskExtension,
    )
    from accord.harness.models import Model, ModelResponse, ToolCall

_WHERE = {
    "STEP_MEDIA_TYPE": "accord.harness._step_events",
    "step_line": "accord.harness._step_events",
    "CHANNEL_MEDIA_TYPE": "accord.harness._wire",
    "COMMANDS_URI": "accord.harness._wire",
    "EVENT_MEDIA_TYPE": "accord.harness._wire",
    "PARTICIPANT_HEADER": "accord.harness._wire",
    "STATUS_KEY": "accord.harness._wire",
    "TASK_KEY": "accord.harness._wire",
    "HarnessAgent": "accord.harness._agent",
    "conversation_agent": "accord.harness._build",
    "from_settings": "accord.harness._build",
    "PARTICIPANT_KINDS": "accord.harness._membership",
    "PARTICIPANT_ROLES": "accord.harness._membership",
    "participants_envelope": "accord.harness._membership",
    "participants_of": "accord.harness._membership",
    "with_participant": "accord.harness._membership",
    "without_participant": "accord.harness._membership",
    "Model": "accord.harness.models",
    "ModelResponse": "accord.harness.models",
    "ToolCall": "accord.harness.models",
    "HarnessSettings": "accord.harness._settings",
    "parse": "accord.harness._settings",
    "USAGE_KEY": "accord.harness._usage",
    "call_id": "accord.harness._usage",
    "calls_of": "accord.harness._usage",
    "turn_of": "accord.harness._usage",
    "Conversation": "accord.harness._transcript",
    "Entry": "accord.harness._transcript",
    "Role": "accord.harness._wire",
    "SubState": "accord.harness._wire",
    "TaskExtension": "accord.harness._wire",
}


__getattr__ = _lazy.exports(__name__, _WHERE)


__all__ = [
    "CHANNEL_MEDIA_TYPE",
    "COMMANDS_URI",
    "EVENT_MEDIA_TYPE",
    "PARTICIPANT_HEADER",
    "PARTICIPANT_KINDS",
    "PARTICIPANT_ROLES",
    "STATUS_KEY",
    "STEP_MEDIA_TYPE",
    "TASK_KEY",
    "USAGE_KEY",
    "Conversation",
    "Entry",
    "HarnessAgent",
    "HarnessSettings",
    "Model",
    "ModelResponse",
    "Role",
    "SubState",
    "TaskExtension",
    "ToolCall",
    "call_id",
    "calls_of",
    "conversation_agent",
    "from_settings",
    "parse",
    "participants_envelope",
    "participants_of",
    "step_line",
    "turn_of",
    "with_participant",
    "without_participant",
]
