"""``accord``: run an A2A server, or talk to any A2A agent."""

from __future__ import annotations

import atexit
import dataclasses
import gc
import logging
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from accord import __version__
from accord.cli._lazy import LazyCommand, LazyGroup

if TYPE_CHECKING:
    import socket

# Imported when one of them runs, so that `accord --help` and `--version` stay instant.
_CLIENT = "accord.cli._client_commands"
LAZY_COMMANDS = {
    "admin": LazyCommand(
        "accord.cli._admin_commands:admin",
        "Operator commands: purge a task on a server; read the server's store directly.",
    ),
    "card": LazyCommand(
        f"{_CLIENT}:card",
        "Show an agent's card: interfaces, capabilities, security schemes, skills, and whether "
        "its signature holds.",
    ),
    "send": LazyCommand(
        f"{_CLIENT}:send", "Send a message and print the answer, once the turn ends."
    ),
    "stream": LazyCommand(f"{_CLIENT}:stream", "Send a message and show the task's progress live."),
    "complete": LazyCommand(
        f"{_CLIENT}:complete",
        "Complete a conversation: send the harness's complete control to TASK_ID.",
    ),
    "tasks": LazyCommand(f"{_CLIENT}:tasks", "List, inspect, cancel and follow tasks."),
    "push": LazyCommand(f"{_CLIENT}:push", "Manage a task's push-notification webhooks."),
    "contracts": LazyCommand(
        "accord.cli._contract_commands:contracts",
        "Interaction contracts between agents: terms-template, propose, list, show, accept, "
        "reject, cancel, complete, approve, verify.",
    ),
    "keys": LazyCommand(
        "accord.cli._contract_commands:keys",
        "Agent keys (Ed25519) for card signing and signed contract acceptances.",
    ),
    "participants": LazyCommand(
        "accord.cli._participant_commands:participants",
        "A conversation's participants: list them; add, change or remove one (an admin).",
    ),
    "chat": LazyCommand(
        "accord.cli._chat_command:chat", "Hold a conversation with an agent in the terminal."
    ),
}


@click.group(cls=LazyGroup, lazy=LAZY_COMMANDS)
@click.version_option(__version__, prog_name="accord")
def main() -> None:
    """accord: a fast, durable A2A 1.0 platform."""


@main.command()
@click.option("--host", help="Address to bind (default 127.0.0.1).")
@click.option("--port", type=int, help="HTTP port (default 9999; 0 picks a free one).")
@click.option(
    "--store",
    help="sqlite:///path (default sqlite:///accord.db), postgresql://user@host/db or memory://.",
)
@click.option(
    "--agent",
    help="A built-in agent (echo, conformance), module:attribute (module alone means "
    "module:agent), harness (conversations: the [harness] table of --config, "
    "docs/harness.md), or remote (workers drive tasks over the command surface: "
    "docs/remote-agents.md).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False),
    help="A TOML settings file.",
)
@click.option("--public-url", help="The base URL the agent card advertises.")
@click.option("--grpc-port", type=int, help="Also serve gRPC on this port.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]))
@click.option(
    "--http",
    type=click.Choice(["accord", "uvicorn"]),
    help="The HTTP server: accord's own HTTP/1.1 front (default) or uvicorn.",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    help="Log lines as text (default) or as JSON objects with request, task and trace ids.",
)
@click.option(
    "--processes",
    type=int,
    help="Serve the port from this many processes (default 1; more needs a PostgreSQL "
    "store): one per core, see docs/operations.md.",
)
@click.option(
    "--access-log/--no-access-log",
    default=None,
    help="Log a line per HTTP request (method, path, status, duration, operation, task).",
)
def serve(config_path: str | None, **flags: Any) -> None:
    """Run an A2A server (JSON-RPC, HTTP+JSON and SSE; gRPC with --grpc-port).

    Exits 2 when the settings or the agent are refused, 3 when the server cannot start (a
    port in use, a store that cannot open); each says why in one line."""
    from accord.app import build_app, load
    from accord.cli import _processes as processes
    from accord.server import ListenError, adopt, bind, check_free, host_port
    from accord.store import redact_url

    try:
        settings = load(config_path, flags)
        worker = processes.worker_from_env()  # a child of `accord serve --processes N`
    except ValueError as exc:
        _fail(exc, 2)
    from accord.telemetry import _logs as logs

    logs.configure(
        settings.log_level,
        settings.log_format,
        settings.secrets(),
        process=worker.index if worker is not None else None,
    )
    log = logging.getLogger("accord")
    if not settings.auth_configured and not settings.loopback_only:
        _fail(
            "refusing to serve without authentication on a non-loopback address "
            f"({settings.host}); configure [[principals]], [jwt], api_keys or bearer_tokens",
            2,
        )
    supervising = worker is None and settings.processes > 1
    if supervising:
        from accord.cli._process_policy import refusal

        refused = refusal(settings.processes, settings.store, settings.grpc_port)
        if refused is not None:
            _fail(refused, 2)
    # The ports first: a busy one ends here, before the agent, the store or the engine start.
    try:
        if worker is not None:
            sockets = adopt(worker.fds)
            processes.watch_parent(worker.parent_fd)
        else:
            if settings.grpc_port is not None and settings.grpc_port == settings.port != 0:
                raise ListenError(
                    f"the gRPC port and the HTTP port are both {settings.port}: "
                    "give gRPC a port of its own (--grpc-port)"
                )
            sockets = bind(settings.host, settings.port, "HTTP")
            if settings.grpc_port is not None:
                check_free(settings.host, settings.grpc_port, "gRPC")
    except ListenError as exc:
        _fail(exc, 3)
    # Port 0: the card and the log give the port the system picked.
    settings = dataclasses.replace(settings, port=sockets[0].getsockname()[1])
    if supervising:
        _supervise(settings, sockets, config_path, flags)
    try:
        app = build_app(settings)
    except ValueError as exc:
        _fail(exc, 2)
    if worker is not None and worker.metrics_dir is not None and app.metrics is not None:
        from accord.server import NodeMetrics

        # /metrics answers for every process of the node (docs/operations.md)
        node = NodeMetrics(worker.metrics_dir, worker.index, settings.processes)
        app.metrics.join(node)
        atexit.register(processes.tidy_when_orphaned, worker.metrics_dir, os.getppid())
    # One accord serve per SQLite file, held before the engine's recovery could fail the
    # running tasks of a server already on it.
    from accord.store import StoreError, hold_store_file

    try:
        hold_store_file(settings.store)
    except StoreError as exc:
        _fail(exc, 3)
    if not settings.auth_configured:
        log.warning("no authentication configured: serving open, on loopback only")
    log.info(
        # "starting": the port is bound; the runner says "listening" once the engine is up.
        "accord %s starting agent %r at %s (store %s)",
        __version__,
        settings.agent,
        settings.advertised_url,
        redact_url(settings.store),
    )
    served: Any = app
    if settings.grpc_port is not None:
        from accord.grpc import WithGrpc

        served = WithGrpc(app, host_port(settings.host, settings.grpc_port))
    # Everything imported and built so far lives as long as the process: keep it out of the
    # collector's way, or each full collection walks it (tens of ms, every few thousand
    # requests; a few microseconds per request on average, more at the tail).
    gc.collect()
    gc.freeze()
    if settings.http == "uvicorn":
        import uvicorn

        server = uvicorn.Server(
            uvicorn.Config(
                served,
                loop="uvloop",
                http="httptools",
                log_level=settings.log_level,
                log_config=None,  # the process's logging (text or JSON) is already set up
                access_log=False,
                lifespan="on",
                timeout_keep_alive=int(settings.keep_alive_s),
                timeout_graceful_shutdown=int(settings.shutdown_grace_s),
                # uvicorn answers 503 past this many connections or requests in progress; it
                # has no request body timeout (body_timeout_s and body_min_rate do not apply).
                limit_concurrency=settings.max_connections or None,
            )
        )
        server.run(sockets=sockets)
        if not server.started:
            sys.exit(3)  # as uvicorn.run: the application failed to start
        return
    from accord.server import Limits
    from accord.server import _runner as runner

    runner.run(
        served,
        settings.host,
        settings.port,
        sockets=sockets,
        limits=Limits(
            keep_alive_s=settings.keep_alive_s,
            body_timeout_s=settings.body_timeout_s,
            body_min_rate=settings.body_min_rate,
            max_connections=settings.max_connections,
        ),
        grace_s=settings.shutdown_grace_s,
    )


def _supervise(
    settings: Any, sockets: list[socket.socket], config_path: str | None, flags: dict[str, Any]
) -> NoReturn:
    """``--processes N`` (N > 1): serve the bound ``sockets`` from N children, exit with the
    supervisor's status (accord.cli._processes)."""
    from accord.cli._processes import Supervisor, child_argv
    from accord.server import host_port
    from accord.store import redact_url

    try:
        for sock in sockets:
            sock.listen(2048)  # connections wait here while the children start
    except OSError as exc:
        _fail(exc, 3)
    logging.getLogger("accord").info(
        "accord %s serving http://%s from %d processes (store %s)",
        __version__,
        host_port(settings.host, settings.port),
        settings.processes,
        redact_url(settings.store),
    )
    argv = child_argv(config_path, {**flags, "port": settings.port})
    status = Supervisor(argv, settings.processes, sockets, settings.shutdown_grace_s).run()
    sys.exit(status)


def _fail(message: object, status: int) -> NoReturn:
    click.echo(f"accord: {message}", err=True)
    sys.exit(status)
