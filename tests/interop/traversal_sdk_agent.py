"""The official Python SDK's hop of the traversal (traversal_hops.py says what a hop does): the
SDK's servers (sdk_servers/echo_server.py's, its push sender on) with an executor that calls
the next agent with the SDK's own client.

    python tests/interop/traversal_sdk_agent.py --port P --grpc-port G [--name python-sdk]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import grpc
import httpx
from a2a.client import ClientConfig, create_client
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import (
    CancelTaskRequest,
    Part,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
)
from google.protobuf import json_format

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sdk_servers"))
from echo_server import serve, start_working
from traversal_hops import TRAVERSAL, Trace, hop, trace_in


def _texts(parts: Any) -> list[str]:
    return [p.text for p in parts if p.WhichOneof("content") == "text"]


def _state(state: int) -> str:
    return str(TaskState.Name(state))


async def call_with_the_sdk(call: dict[str, Any]) -> tuple[Trace | None, str]:
    mode = call["mode"]
    request = json_format.ParseDict(
        {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"data": call["then"], "mediaType": TRAVERSAL}],
            }
        },
        SendMessageRequest(),
    )
    async with httpx.AsyncClient(timeout=60) as http:
        config = ClientConfig(
            streaming=mode in ("stream", "resubscribe"),
            httpx_client=http,
            grpc_channel_factory=grpc.aio.insecure_channel,
            supported_protocol_bindings=[call["transport"]],
        )
        if mode == "push":
            push = call["push"]
            config.push_notification_config = TaskPushNotificationConfig(
                url=push["url"], token=push["token"]
            )
        client = await create_client(call["card"], client_config=config)
        async with client:
            if mode in ("send", "push", "stream"):
                trace, state = None, ""
                async for event in client.send_message(request):
                    trace, state = _read(event, trace, state)
                return trace, state
            if mode == "resubscribe":
                stream = client.send_message(request)
                first = await anext(stream)  # the caller goes away after the first event
                await stream.aclose()
                task_id = first.task.id if first.HasField("task") else first.status_update.task_id
                trace = None
                subscription = client.subscribe(SubscribeToTaskRequest(id=task_id))
                async for event in subscription:
                    status = _status(event)
                    trace = trace_in(_texts(status.message.parts)) if status else None
                    if trace is not None:
                        break
                await subscription.aclose()
                canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
                return trace, _state(canceled.status.state)
    raise ValueError(f"unknown mode {mode!r}")


def _status(event: StreamResponse) -> TaskStatus | None:
    if event.HasField("task"):
        return event.task.status
    if event.HasField("status_update"):
        return event.status_update.status
    return None


def _read(event: StreamResponse, trace: Trace | None, state: str) -> tuple[Trace | None, str]:
    """The trace and state after one more event of a send or a stream."""
    if event.HasField("task"):
        texts = [
            t for a in event.task.artifacts if a.artifact_id == "trace" for t in _texts(a.parts)
        ]
        return trace or trace_in(texts), _state(event.task.status.state)
    if event.HasField("artifact_update"):
        return trace or trace_in(_texts(event.artifact_update.artifact.parts)), state
    status = _status(event)
    return trace, _state(status.state) if status else state


class TraversalExecutor(AgentExecutor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.canceled: dict[str, asyncio.Event] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await start_working(context, event_queue)
        instruction = None
        for part in context.message.parts if context.message else []:
            if part.media_type == TRAVERSAL and part.WhichOneof("content") == "data":
                instruction = json_format.MessageToDict(part.data)
        if not isinstance(instruction, dict):
            await updater.failed(updater.new_agent_message([Part(text="no traversal instruction")]))
            return
        try:
            trace = await hop(self.name, instruction, call_with_the_sdk)
        except Exception as exc:  # the hop fails its task, saying why
            text = f"{self.name}: {type(exc).__name__}: {exc}"
            await updater.failed(updater.new_agent_message([Part(text=text)]))
            return
        if instruction.get("hold"):
            canceled = self.canceled.setdefault(context.task_id, asyncio.Event())
            said = updater.new_agent_message([Part(text=json.dumps(trace))])
            await updater.update_status(TaskState.TASK_STATE_WORKING, message=said)
            await canceled.wait()
            return
        await updater.add_artifact(
            [Part(text=json.dumps(trace))], artifact_id="trace", name="trace", last_chunk=True
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()
        self.canceled.setdefault(context.task_id, asyncio.Event()).set()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--name", default="python-sdk")
    args = parser.parse_args()
    executor = TraversalExecutor(args.name)
    asyncio.run(serve("127.0.0.1", args.port, args.grpc_port, True, executor))


if __name__ == "__main__":
    main()
