"""``accord``: run an A2A server, or talk to any A2A agent."""

from __future__ import annotations

import gc
import logging
import sys
from typing import Any

import click

from accord import __version__
from accord.cli.lazy import LazyCommand, LazyGroup

# Imported when one of them runs, so that `accord --help` and `--version` stay instant.
_CLIENT = "accord.cli.client_commands"
LAZY_COMMANDS = {
    "admin": LazyCommand(
        "accord.cli.admin_commands:admin",
        "Operator commands on the server's store (read directly, not over the network).",
    ),
    "card": LazyCommand(
        f"{_CLIENT}:card",
        "Show an agent's card: interfaces, capabilities, security schemes, skills.",
    ),
    "send": LazyCommand(
        f"{_CLIENT}:send", "Send a message and print the answer, once the turn ends."
    ),
    "stream": LazyCommand(f"{_CLIENT}:stream", "Send a message and show the task's progress live."),
    "tasks": LazyCommand(f"{_CLIENT}:tasks", "List, inspect, cancel and follow tasks."),
    "push": LazyCommand(f"{_CLIENT}:push", "Manage a task's push-notification webhooks."),
}


@click.group(cls=LazyGroup, lazy=LAZY_COMMANDS)
@click.version_option(__version__, prog_name="accord")
def main() -> None:
    """accord: a fast, durable A2A 1.0 platform."""


@main.command()
@click.option("--host", help="Address to bind (default 127.0.0.1).")
@click.option("--port", type=int, help="HTTP port (default 9999).")
@click.option(
    "--store",
    help="sqlite:///path (default sqlite:///accord.db), postgresql://user@host/db or memory://.",
)
@click.option(
    "--agent",
    help="A built-in agent (echo, conformance), module:attribute, or remote (workers drive "
    "tasks over the command surface: docs/remote-agents.md).",
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
    "--access-log/--no-access-log",
    default=None,
    help="Log a line per HTTP request (method, path, status, duration, operation, task).",
)
def serve(config_path: str | None, **flags: Any) -> None:
    """Run an A2A server (JSON-RPC, HTTP+JSON and SSE; gRPC with --grpc-port)."""
    from accord.server.build import build_app
    from accord.server.settings import load
    from accord.store import redact_url

    try:
        settings = load(config_path, flags)
        app = build_app(settings)
    except (ValueError, OSError, ImportError, AttributeError) as exc:
        click.echo(f"accord: {exc}", err=True)
        sys.exit(2)
    # One accord serve per SQLite file, held before the engine's recovery could fail the
    # running tasks of a server already on it.
    from accord.store import StoreError, hold_store_file

    try:
        hold_store_file(settings.store)
    except StoreError as exc:
        click.echo(f"accord: {exc}", err=True)
        sys.exit(3)
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    log = logging.getLogger("accord")
    if not settings.auth_configured:
        if not settings.loopback_only:
            click.echo(
                "accord: refusing to serve without authentication on a non-loopback address "
                f"({settings.host}); configure [[principals]], [jwt], api_keys or bearer_tokens",
                err=True,
            )
            sys.exit(2)
        log.warning("no authentication configured: serving open, on loopback only")
    log.info(
        "accord %s serving agent %r on %s (store %s)",
        __version__,
        settings.agent,
        settings.advertised_url,
        redact_url(settings.store),
    )
    served: Any = app
    if settings.grpc_port:
        from accord.grpc.server import WithGrpc

        served = WithGrpc(app, f"{settings.host}:{settings.grpc_port}")
    # Everything imported and built so far lives as long as the process: keep it out of the
    # collector's way, or each full collection walks it (tens of ms, every few thousand
    # requests; a few microseconds per request on average, more at the tail).
    gc.collect()
    gc.freeze()
    if settings.http == "uvicorn":
        import uvicorn

        uvicorn.run(
            served,
            host=settings.host,
            port=settings.port,
            loop="uvloop",
            http="httptools",
            log_level=settings.log_level,
            access_log=False,
            lifespan="on",
            timeout_keep_alive=int(settings.keep_alive_s),
            timeout_graceful_shutdown=int(settings.shutdown_grace_s),
        )
        return
    from accord.server import runner
    from accord.server.h1 import Limits

    runner.run(
        served,
        settings.host,
        settings.port,
        limits=Limits(keep_alive_s=settings.keep_alive_s),
        grace_s=settings.shutdown_grace_s,
    )
