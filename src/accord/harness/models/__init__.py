"""Models: what answers a conversation's turn. A model gets the :class:`Conversation` and
returns a :class:`ModelResponse`; the harness agent stores it and parks the task.

The providers' adapters (:class:`OpenAIModel`, :class:`AnthropicModel`, the :class:`Retry`
policy they share, and :class:`HttpClient`, accord's own HTTP client they call their
endpoint with unless given the provider's package's) are imported when first named; neither
provider's package is imported unless its client is used."""

from typing import TYPE_CHECKING

from accord.harness import _lazy
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

if TYPE_CHECKING:
    from accord.harness.models._adapter import Retry
    from accord.harness.models._anthropic import AnthropicModel
    from accord.harness.models._http import HttpClient
    from accord.harness.models._openai_compatible import OpenAIModel

_ADAPTERS = {
    "AnthropicModel": "accord.harness.models._anthropic",
    "HttpClient": "accord.harness.models._http",
    "OpenAIModel": "accord.harness.models._openai_compatible",
    "Retry": "accord.harness.models._adapter",
}


__getattr__ = _lazy.exports(__name__, _ADAPTERS)


__all__ = [
    "AnthropicModel",
    "Entry",
    "FunctionModel",
    "HttpClient",
    "Model",
    "ModelError",
    "ModelEvent",
    "ModelFailure",
    "ModelResponse",
    "OpenAIModel",
    "Retry",
    "ScriptedModel",
    "StreamingModel",
    "TextDelta",
    "ToolCall",
    "TurnFunction",
    "Usage",
    "load_script",
]
