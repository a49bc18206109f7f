"""Models: what answers a conversation's turn. A model gets the :class:`Conversation` and
returns a :class:`ModelResponse`; the harness agent stores it and parks the task."""

from accord.harness.models._base import (
    Entry,
    FunctionModel,
    Model,
    ModelError,
    ModelEvent,
    ModelFailure,
    ModelResponse,
    StreamingModel,
    TextDelta,
    ToolCall,
    TurnFunction,
    Usage,
)
from accord.harness.models._scripted import ScriptedModel, load_script

__all__ = [
    "Entry",
    "FunctionModel",
    "Model",
    "ModelError",
    "ModelEvent",
    "ModelFailure",
    "ModelResponse",
    "ScriptedModel",
    "StreamingModel",
    "TextDelta",
    "ToolCall",
    "TurnFunction",
    "Usage",
    "load_script",
]
