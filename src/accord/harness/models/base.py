"""The model seam: a conversation in, a response out.

The scripted model (tests, offline demos), an author's turn function and the real model
adapters all answer the same call, so the harness agent runs a turn the same way whatever
answers it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from accord.harness.transcript import Conversation, Entry


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ModelResponse:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()


class Model(Protocol):
    async def respond(self, conversation: Conversation) -> ModelResponse: ...


TurnFunction = Callable[[Conversation], Awaitable[str | ModelResponse] | str | ModelResponse]


class FunctionModel:
    """A model that is an author's function: ``turn(conversation)`` returns the answer's
    text (or a ModelResponse), sync or async."""

    def __init__(self, turn: TurnFunction) -> None:
        self.turn = turn

    async def respond(self, conversation: Conversation) -> ModelResponse:
        answer = self.turn(conversation)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, ModelResponse):
            return answer
        if isinstance(answer, str):
            return ModelResponse(text=answer)
        raise TypeError(
            f"a turn function returns the answer's text or a ModelResponse, not {answer!r}"
        )


__all__ = ["Entry", "FunctionModel", "Model", "ModelResponse", "ToolCall", "TurnFunction"]
