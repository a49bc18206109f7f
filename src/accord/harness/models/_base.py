"""The model seam: a conversation in, a response out.

The scripted model (tests, offline demos), an author's turn function and the real model
adapters all answer the same call, so the harness agent runs a turn the same way whatever
answers it.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from accord.errors import AccordError
from accord.harness._transcript import Conversation, Entry, ToolCall

# What kind of failure ended a model call (the status metadata of a parked turn says it):
# the endpoint could not be reached or answered 5xx; it refused for the rate (429, after
# honouring Retry-After up to a bound); the conversation is longer than the model takes; the
# model refused to answer (a content filter); anything else.
ModelFailure = Literal[
    "model_unavailable", "rate_limited", "context_too_long", "model_refused", "model_error"
]


class ModelError(AccordError):
    """A model call failed after the retries its adapter allows. ``reason`` is the kind of
    failure, ``model`` the model as the settings name it (``openai:gpt-4.1-mini``), the message
    says how in one line (``detail``: the same without the model's name); ``retry_after_s`` is
    what the provider last asked to wait, if it did."""

    def __init__(
        self,
        message: str,
        *,
        reason: ModelFailure = "model_error",
        model: str = "",
        retry_after_s: float | None = None,
        detail: str = "",
    ) -> None:
        super().__init__(message)
        self.reason: ModelFailure = reason
        self.model = model
        self.retry_after_s = retry_after_s
        # what failed, without the model's name (the message is "model <model>: <detail>")
        self.detail = detail or message.removeprefix(f"model {model}: ")


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one model call took: in (of which cached) and out."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
        )


@dataclass(frozen=True, slots=True)
class ModelResponse:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the answer's text, as the model writes it."""

    text: str


ModelEvent = TextDelta | ModelResponse  # a stream of deltas, then the whole response


class Model(Protocol):
    async def respond(self, conversation: Conversation) -> ModelResponse: ...


@runtime_checkable
class StreamingModel(Protocol):
    """A model that writes its answer as it comes: text deltas, then the ModelResponse."""

    def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]: ...


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


__all__ = [
    "Entry",
    "FunctionModel",
    "Model",
    "ModelError",
    "ModelEvent",
    "ModelFailure",
    "ModelResponse",
    "StreamingModel",
    "TextDelta",
    "ToolCall",
    "TurnFunction",
    "Usage",
]
