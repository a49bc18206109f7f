"""Agents the dashboard tests serve (``accord serve --agent dashboard_agents:…``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from accord.agents import RequestContext, TaskHandle
from accord.harness import Conversation, HarnessSettings
from accord.harness.agent import HarnessAgent
from accord.harness.models import FunctionModel
from accord.harness.wire import COMMANDS_URI
from accord.wire.model import AgentExtension

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


COMMANDS = [
    {"name": "status", "description": "where the task stands", "argument_hint": ""},
    {"name": "sub-task", "description": "start a sub-task", "argument_hint": "<description>"},
    {"name": "model", "description": "choose the model", "argument_hint": "[name]"},
]


class _WithCommands(HarnessAgent):
    """The harness with a commands extension on its card (the list the compose box and the
    chat client complete from)."""

    def card_extensions(self) -> list[AgentExtension]:  # type: ignore[override]
        return [
            *HarnessAgent.card_extensions(),
            AgentExtension(uri=COMMANDS_URI, params={"commands": COMMANDS}),
        ]


conversation = _WithCommands(
    HarnessSettings(agent_id="echoer", model="function"), {"function": FunctionModel(_turn)}
)
