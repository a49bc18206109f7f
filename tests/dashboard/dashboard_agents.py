"""Agents the dashboard tests serve (``accord serve --agent dashboard_agents:…``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from accord.agents import RequestContext, TaskHandle
from accord.harness import Conversation, HarnessSettings
from accord.harness._agent import HarnessAgent
from accord.harness.models import FunctionModel

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
