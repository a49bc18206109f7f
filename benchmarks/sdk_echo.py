"""The a2a-sdk echo server of the interop tests (tests/sdk_servers/echo_server.py: its agent
and card), with its task store filled with ``--tasks`` completed echo tasks before it serves,
so GetTask and ListTasks run against a known number of stored tasks.

The store is the SDK's ``InMemoryTaskStore`` (with ``InMemoryPushNotificationConfigStore``),
or with ``--db PATH`` its durable one: ``DatabaseTaskStore`` and
``DatabasePushNotificationConfigStore`` on one SQLite file through SQLAlchemy and aiosqlite
(the ``a2a-sdk[sqlite]`` extra), opened the way the SDK's documentation shows
(``create_async_engine("sqlite+aiosqlite:///PATH")``, SQLite's own defaults).

The stored tasks have the shape the agent itself leaves (COMPLETED, one user message, one
``echo: hello N`` artifact) and ids ``uuid.UUID(int=N)``, N from 1.

    python benchmarks/sdk_echo.py --port 8765 --grpc-port 50561 --tasks 1000 [--db sdk.db]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import uvicorn
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import (
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    PushNotificationConfigStore,
    TaskStore,
)
from a2a.types import (
    AgentCard,
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
    a2a_pb2_grpc,
)
from starlette.applications import Starlette

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "sdk_servers"))
from echo_server import EchoAgent, make_card  # type: ignore[import-not-found]

BASE_MS = 1_700_000_000_000


def stored_task(index: int) -> Task:
    task_id = str(uuid.UUID(int=index))
    context_id = str(uuid.UUID(int=1_000_000_000 + index))
    task = Task(
        id=task_id,
        context_id=context_id,
        status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED),
        artifacts=[
            Artifact(
                artifact_id=f"a{index}", name="echo", parts=[Part(text=f"echo: hello {index}")]
            )
        ],
        history=[
            Message(
                message_id=f"m{index}",
                context_id=context_id,
                task_id=task_id,
                role=Role.ROLE_USER,
                parts=[Part(text=f"hello {index}")],
            )
        ],
    )
    task.status.timestamp.FromMilliseconds(BASE_MS + index)
    return task


async def fill(store: InMemoryTaskStore, count: int) -> None:
    context = ServerCallContext()
    for index in range(1, count + 1):
        await store.save(stored_task(index), context)


async def open_database(path: str, count: int) -> tuple[TaskStore, PushNotificationConfigStore]:
    """The SDK's durable stores on one SQLite file, filled with ``count`` tasks.

    The rows are the store's own (its ``_to_orm``, the mapping ``save`` writes), inserted in
    one transaction per 5,000: ``save`` commits each task on its own, which would take
    minutes for 100,000.
    """
    from a2a.server.tasks import DatabasePushNotificationConfigStore, DatabaseTaskStore
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(f"sqlite+aiosqlite:///{path}")
    store = DatabaseTaskStore(engine)
    configs = DatabasePushNotificationConfigStore(engine)
    await store.initialize()
    await configs.initialize()
    owner = store.owner_resolver(ServerCallContext())  # an unauthenticated caller's scope
    for start in range(1, count + 1, 5_000):
        async with store.async_session_maker.begin() as session:
            indexes = range(start, min(start + 5_000, count + 1))
            session.add_all([store._to_orm(stored_task(index), owner) for index in indexes])
    return store, configs


async def serve(host: str, port: int, grpc_port: int, tasks: int, db: str | None) -> None:
    card = make_card(host, port, grpc_port)
    extended = AgentCard()
    extended.CopyFrom(card)
    store: TaskStore
    configs: PushNotificationConfigStore
    if db:
        store, configs = await open_database(db, tasks)
    else:
        store, configs = InMemoryTaskStore(), InMemoryPushNotificationConfigStore()
        await fill(store, tasks)
    handler = DefaultRequestHandler(
        agent_executor=EchoAgent(),
        task_store=store,
        agent_card=card,
        push_config_store=configs,
        extended_agent_card=extended,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await handler.aclose()

    app = Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url="/a2a/jsonrpc"),
            *create_rest_routes(handler, path_prefix="/a2a/rest"),
        ],
        lifespan=lifespan,
    )
    grpc_server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(  # type: ignore[no-untyped-call]
        GrpcHandler(handler), grpc_server
    )
    grpc_server.add_insecure_port(f"{host}:{grpc_port}")
    await grpc_server.start()
    # The same server stack as accord serve: uvloop, httptools, no access log.
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
    )
    try:
        await uvicorn.Server(config).serve()
    finally:
        await grpc_server.stop(grace=1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--grpc-port", type=int, default=50561)
    parser.add_argument("--tasks", type=int, default=0)
    parser.add_argument("--db", help="the SDK's durable store on this SQLite file")
    args = parser.parse_args()
    import uvloop

    uvloop.run(serve(args.host, args.port, args.grpc_port, args.tasks, args.db))


if __name__ == "__main__":
    main()
