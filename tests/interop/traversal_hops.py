"""The traversal (tests/interop/test_traversal.py): one nested instruction routed through a
chain of agents of different SDKs, each hop resolving the next agent's card and calling it
over the transport the scenario names; the trace comes back up the chain.

The instruction is a data part of media type ``application/vnd.accord.traversal+json``::

    {"hold": false,
     "call": {"card": "<base URL of the next agent>", "transport": "JSONRPC|HTTP+JSON|GRPC",
              "mode": "send|stream|push|resubscribe",
              "push": {"url": "...", "token": "..."},      (mode push: the callee's webhook)
              "then": <the instruction for the next agent>}}

A hop with ``call`` calls the next agent in that mode and reads the next agent's trace from its
answer; one without is the last. A hop's trace is its own record followed by the next one's::

    [{"agent": "accord", "transport": "GRPC", "mode": "send", "callee": "TASK_STATE_COMPLETED"},
     ..., {"agent": "accord"}]

It answers with the trace as the text of an artifact ``trace`` and completes; or, with
``hold``, says it in a WORKING status message and works until it is canceled. The modes:
``send`` (SendMessage, blocking), ``stream`` (SendStreamingMessage to its end), ``push``
(SendMessage whose configuration registers the callee's webhook ``push``), ``resubscribe``
(stream, drop the stream after its first event, SubscribeToTask until the held callee's trace
shows, then CancelTask).

This module holds the wire of it (used by the three implementations: this one on accord's
client, traversal_sdk_agent.py on the official Python SDK, tests/js/traversal.mjs on the JS
SDK) and the accord agent: ``accord serve --agent traversal_hops:agent``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Iterable
from contextlib import aclosing
from typing import Any

from accord.agents import RequestContext, TaskHandle
from accord.client import Client
from accord.wire import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    TaskPushNotificationConfig,
    TaskState,
)

TRAVERSAL = "application/vnd.accord.traversal+json"
Trace = list[dict[str, Any]]
CallNext = Callable[[dict[str, Any]], Awaitable[tuple[Trace | None, str]]]


def trace_in(texts: Iterable[str]) -> Trace | None:
    """The trace among ``texts`` (a JSON list), if one is."""
    for text in texts:
        try:
            found = json.loads(text)
        except ValueError:
            continue
        if isinstance(found, list):
            return found
    return None


async def hop(name: str, instruction: dict[str, Any], call_next: CallNext) -> Trace:
    """This hop's trace: ``name``'s record, then the next agent's trace (``call_next``)."""
    call = instruction.get("call")
    if not call:
        return [{"agent": name}]
    rest, state = await call_next(call)
    if rest is None:
        raise RuntimeError(f"no trace from {call['card']}")
    record = {"agent": name, "transport": call["transport"], "mode": call["mode"], "callee": state}
    return [record, *rest]


# --- accord's hop, on accord's client ------------------------------------------------------


def _texts(parts: Iterable[Part]) -> list[str]:
    return [p.text for p in parts if isinstance(p.text, str)]


async def call_with_accord(call: dict[str, Any]) -> tuple[Trace | None, str]:
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.USER,
        parts=[Part(data=call["then"], media_type=TRAVERSAL)],
    )
    async with Client.connect(call["card"], binding=call["transport"]) as client:
        mode = call["mode"]
        if mode in ("send", "push"):
            configuration = None
            if mode == "push":
                push = TaskPushNotificationConfig(
                    url=call["push"]["url"], token=call["push"]["token"]
                )
                configuration = SendMessageConfiguration(task_push_notification_config=push)
            task = await client.send(message, configuration=configuration)
            assert not isinstance(task, Message)
            texts = [t for a in task.artifacts if a.artifact_id == "trace" for t in _texts(a.parts)]
            return trace_in(texts), task.status.state.value
        if mode == "stream":
            trace, state = None, ""
            async for event in client.stream(message):
                if event.which == "artifact_update":
                    trace = trace or trace_in(_texts(event.artifact_update.artifact.parts))
                elif event.which in ("task", "status_update"):
                    state = getattr(event, event.which).status.state.value
            return trace, state
        if mode == "resubscribe":
            async with aclosing(client.stream(message)) as stream:
                first = await anext(stream)  # the caller goes away after the first event
            task_id = first.task.id if first.which == "task" else first.status_update.task_id
            trace = None
            async with aclosing(client.subscribe(task_id)) as events:
                async for event in events:
                    if event.which in ("task", "status_update"):
                        said = getattr(event, event.which).status.message
                        trace = trace_in(_texts(said.parts)) if said else None
                    if trace is not None:
                        break
            canceled = await client.cancel(task_id)
            return trace, canceled.status.state.value
    raise ValueError(f"unknown mode {mode!r}")


def instruction_of(message: Message) -> dict[str, Any] | None:
    for part in message.parts:
        if part.media_type == TRAVERSAL and isinstance(part.data, dict):
            return part.data
    return None


class TraversalAgent:
    """accord's hop (``name``: how it signs the trace)."""

    def __init__(self, name: str = "accord") -> None:
        self.name = name

    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None:
        instruction = instruction_of(ctx.message)
        if instruction is None:
            await task.reject("not a traversal instruction")
            return
        await task.start_working()
        try:
            trace = await hop(self.name, instruction, call_with_accord)
        except Exception as exc:  # the hop fails its task, saying why
            await task.fail(f"{self.name}: {type(exc).__name__}: {exc}")
            return
        if instruction.get("hold"):
            await task.note(json.dumps(trace))
            await asyncio.Event().wait()  # until CancelTask cancels this coroutine
        await task.update_artifact(text=json.dumps(trace), artifact_id="trace", last_chunk=True)
        await task.complete()

    async def cancel(self, ctx: RequestContext, task: TaskHandle) -> None:
        return None


agent = TraversalAgent()

__all__ = ["TRAVERSAL", "TaskState", "agent", "hop", "trace_in"]
