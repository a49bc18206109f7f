"""Agents the chat tests serve as a real process (``accord serve --agent chat_agents:…``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from accord.harness import Conversation, HarnessSettings
from accord.harness._agent import HarnessAgent
from accord.harness.models import ModelEvent, ModelResponse, TextDelta

# A message "gate:PATH" makes the model stop after its first words until PATH exists: a
# server stopped meanwhile cuts the reply half written.
FIRST = ("The ", "reply ")
LAST = ("is ", "whole.")


class GatedModel:
    async def respond(self, conversation: Conversation) -> ModelResponse:
        return ModelResponse(text="".join(FIRST + LAST))

    async def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        text = conversation.text
        gate = Path(text.removeprefix("gate:")) if text.startswith("gate:") else None
        for word in FIRST:
            yield TextDelta(word)
        while gate is not None and not gate.exists():
            await asyncio.sleep(0.05)
        for word in LAST:
            yield TextDelta(word)
        yield ModelResponse(text="".join(FIRST + LAST))


gated = HarnessAgent(HarnessSettings(agent_id="writer", model="gated"), {"gated": GatedModel()})
