"""The scripted model: replays a JSON file of responses, one per model call, in order across
a task's turns.

The file is a list of ``{"text": "...", "tool_calls": [{"name": "...", "arguments": {...}}]}``
(``tool_calls`` optional). A task's position in the script is the number of model calls it
has made, which the task's own history records, so a restart (or another node) goes on where
the task stopped. Past the end it answers ``"(script exhausted)"``.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from accord.harness._transcript import Conversation
from accord.harness.models._base import ModelResponse, ToolCall

EXHAUSTED = "(script exhausted)"


class _ScriptedCall(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    name: str
    arguments: dict[str, object] = {}


class _ScriptedResponse(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    text: str = ""
    tool_calls: list[_ScriptedCall] = []


def load_script(path: str | Path) -> tuple[ModelResponse, ...]:
    """The responses of a script file; ValueError naming the file and the entry at fault."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the model script ({exc.strerror})") from None
    try:
        script = msgspec.json.decode(raw, type=list[_ScriptedResponse])
    except msgspec.ValidationError as exc:
        raise ValueError(f"{path}: not a model script: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ValueError(f"{path}: not JSON: {exc}") from None
    return tuple(
        ModelResponse(
            text=entry.text,
            tool_calls=tuple(ToolCall(c.name, dict(c.arguments)) for c in entry.tool_calls),
        )
        for entry in script
    )


class ScriptedModel:
    def __init__(self, responses: tuple[ModelResponse, ...]) -> None:
        self.responses = responses

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        return cls(load_script(path))

    async def respond(self, conversation: Conversation) -> ModelResponse:
        index = conversation.model_calls
        if index < len(self.responses):
            return self.responses[index]
        return ModelResponse(text=EXHAUSTED)
