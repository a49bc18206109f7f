"""Agents the dashboard tests serve (``accord serve --agent dashboard_agents:…``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from accord.agents import RequestContext, TaskHandle
from accord.harness import Conversation, HarnessSettings
from accord.harness._agent import HarnessAgent
from accord.harness.models import FunctionModel, ModelEvent, ModelResponse, TextDelta

# A message "gate:PATH" makes the streamer stop after its first tokens until PATH exists, so
# a test sees a reply half written, then lets it finish.
FIRST_TOKENS = ("The ", "reply ", "streams ")
LAST_TOKENS = ("in ", "token ", "by ", "token.")


async def streamer(ctx: RequestContext, task: TaskHandle) -> None:
    await task.start_working()
    gate = Path(ctx.text.removeprefix("gate:")) if ctx.text.startswith("gate:") else None
    for n, token in enumerate(FIRST_TOKENS):
        await task.update_artifact(text=token, artifact_id="reply", name="reply", append=n > 0)
    await task.flush()
    while gate is not None and not gate.exists():
        await asyncio.sleep(0.05)
    for n, token in enumerate(LAST_TOKENS):
        last = n == len(LAST_TOKENS) - 1
        await task.update_artifact(
            text=token, artifact_id="reply", name="reply", append=True, last_chunk=last
        )
    await task.complete()


async def _turn(conversation: Conversation) -> str:
    return f"heard {conversation.sender}: {conversation.text}"


# (the harness's own card lists its built-in commands — /model, /effort, /sub-task, /status,
# /help — under the commands extension: what the compose box and the chat client complete)
conversation = HarnessAgent(
    HarnessSettings(agent_id="echoer", model="function"), {"function": FunctionModel(_turn)}
)


class _Streaming:
    """A model that writes its answer in pieces, as a real model streams (the reply
    artifact, then the same text as the turn's status message)."""

    async def respond(self, conversation: Conversation) -> ModelResponse:
        return ModelResponse(text=await _turn(conversation))

    async def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        text = await _turn(conversation)
        for start in range(0, len(text), 6):
            yield TextDelta(text[start : start + 6])
        yield ModelResponse(text=text)


talker = HarnessAgent(
    HarnessSettings(agent_id="talker", model="streaming"), {"streaming": _Streaming()}
)
