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
"""

from __future__ import annotations

from accord.harness.agent import HarnessAgent
from accord.harness.models import FunctionModel, Model, ModelResponse, ToolCall, TurnFunction
from accord.harness.settings import HarnessSettings, parse
from accord.harness.transcript import Conversation, Entry
from accord.harness.wire import Role, SubState, TaskExtension

FUNCTION_MODEL = "function"


def conversation_agent(turn: TurnFunction, *, agent_id: str = "accord") -> HarnessAgent:
    """A harness agent whose every turn is answered by ``turn(conversation)``."""
    settings = HarnessSettings(agent_id=agent_id, model=FUNCTION_MODEL)
    return HarnessAgent(settings, {FUNCTION_MODEL: FunctionModel(turn)})


def from_settings(settings: HarnessSettings) -> HarnessAgent:
    """The harness agent of ``accord serve --agent harness``; its models are built now, so
    that one that cannot be (a missing script) stops the server at start (ValueError)."""
    agent = HarnessAgent(settings)
    agent.check_models()
    return agent


__all__ = [
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
    "conversation_agent",
    "from_settings",
    "parse",
]
