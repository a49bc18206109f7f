"""Models: what answers a conversation's turn. A model gets the :class:`Conversation` and
returns a :class:`ModelResponse`; the harness agent stores it and parks the task."""

from accord.harness.models.base import (
    Entry,
    FunctionModel,
    Model,
    ModelResponse,
    ToolCall,
    TurnFunction,
)
from accord.harness.models.scripted import ScriptedModel, load_script

__all__ = [
    "Entry",
    "FunctionModel",
    "Model",
    "ModelResponse",
    "ScriptedModel",
    "ToolCall",
    "TurnFunction",
    "load_script",
]
