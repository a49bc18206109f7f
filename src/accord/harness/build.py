"""Making harness agents: from the ``[harness]`` settings, or around an author's turn
function."""

from __future__ import annotations

from accord.harness.agent import HarnessAgent
from accord.harness.models import FunctionModel, TurnFunction
from accord.harness.settings import HarnessSettings

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
