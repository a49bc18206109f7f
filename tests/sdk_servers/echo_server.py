"""An echo agent built on the official a2a-sdk, used as the peer in interop tests.

For a message whose text parts join to T, the agent creates a task, moves it to WORKING, emits
one artifact with the single text part ``echo: T`` (lastChunk true) and completes it.
A text starting with ``slow`` makes it wait before the artifact: ``slow:2`` waits two seconds,
plain ``slow`` waits 60 (long enough to cancel it).

JSON-RPC (``/a2a/jsonrpc``) and HTTP+JSON (``/a2a/rest``) are served by one uvicorn app, gRPC on
its own port; tasks and push configs live in memory; the card declares streaming, push
notifications and the extended card. With ``--push-sender`` the SDK's own push sender POSTs
each event to the push configs registered (without it configs are kept, nothing is sent).

    python tests/sdk_servers/echo_server.py --port 8765 --grpc-port 50561
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator

import grpc
import httpx
import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
    a2a_pb2_grpc,
)
from starlette.applications import Starlette

SLOW_DEFAULT_SECONDS = 60.0


def _text(context: RequestContext) -> str:
    message = context.message
    if message is None:
        return ""
    return "".join(part.text for part in message.parts if part.WhichOneof("content") == "text")


def _delay(text: str) -> float:
    if not text.startswith("slow"):
        return 0.0
    _, _, seconds = text.partition(":")
    try:
        return float(seconds)
    except ValueError:
        return SLOW_DEFAULT_SECONDS


async def start_working(context: RequestContext, event_queue: EventQueue) -> TaskUpdater:
    """The task created (the SDK wants the Task as the first event) and WORKING; its updater."""
    if context.current_task is None:
        await event_queue.enqueue_event(
            Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message] if context.message else [],
            )
        )
    updater = TaskUpdater(event_queue, context.task_id, context.context_id)
    await updater.start_work()
    return updater


class EchoAgent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = _text(context)
        updater = await start_working(context, event_queue)
        delay = _delay(text)
        if delay:
            await asyncio.sleep(delay)
        await updater.add_artifact([Part(text=f"echo: {text}")], name="echo", last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def make_card(host: str, port: int, grpc_port: int) -> AgentCard:
    base = f"http://{host}:{port}"
    return AgentCard(
        name="SDK Echo",
        description="Echoes text back as an artifact (a2a-sdk).",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(protocol_binding=binding, protocol_version="1.0", url=url)
            for binding, url in (
                ("JSONRPC", f"{base}/a2a/jsonrpc"),
                ("HTTP+JSON", f"{base}/a2a/rest"),
                ("GRPC", f"{host}:{grpc_port}"),
            )
        ],
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=True, extended_agent_card=True
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echo text", tags=["echo"])],
    )


async def serve(
    host: str,
    port: int,
    grpc_port: int,
    push_sender: bool = False,
    executor: AgentExecutor | None = None,
) -> None:
    """The SDK's servers for ``executor`` (default: the echo agent) until cancelled."""
    card = make_card(host, port, grpc_port)
    extended = AgentCard()
    extended.CopyFrom(card)
    extended.description = "Extended card of the SDK echo agent."
    push_configs = InMemoryPushNotificationConfigStore()
    # With --push-sender, the SDK's own sender POSTs each event to the configs registered.
    push_client = httpx.AsyncClient(timeout=10) if push_sender else None
    handler = DefaultRequestHandler(
        agent_executor=executor or EchoAgent(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=push_configs,
        push_sender=BasePushNotificationSender(push_client, push_configs)
        if push_client is not None
        else None,
        extended_agent_card=extended,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await handler.aclose()
        if push_client is not None:
            await push_client.aclose()

    app = Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url="/a2a/jsonrpc"),
            *create_rest_routes(handler, path_prefix="/a2a/rest"),
        ],
        lifespan=lifespan,
    )
    grpc_server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
    grpc_server.add_insecure_port(f"{host}:{grpc_port}")
    await grpc_server.start()
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    try:
        await server.serve()
    finally:
        await grpc_server.stop(grace=1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--grpc-port", type=int, default=50561)
    parser.add_argument("--push-sender", action="store_true", help="POST events to push configs")
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port, args.grpc_port, args.push_sender))


if __name__ == "__main__":
    main()
