"""``accord chat URL [--task ID] [--as PARTICIPANT]``: talk with an agent in the terminal.

Imported only when it runs (Textual is loaded then), like every client command."""

from __future__ import annotations

import sys

import click

from accord.cli._client_commands import EXIT_USAGE, Settings, _client_options, _connect


@click.command()
@click.argument("url")
@click.option("--task", "task_id", metavar="ID", help="Join this task (a conversation).")
@_client_options
def chat(settings: Settings, task_id: str | None) -> None:
    """Hold a conversation with an agent in the terminal.

    The reply streams in as it is written; the header shows the task's state, sub-state and
    whose turn it is. Enter sends; / completes the agent's commands; Ctrl+D completes the
    conversation; Ctrl+C cancels it (after asking); Ctrl+Q leaves it running."""
    from accord.errors import require

    require("chat", "accord chat")
    from accord.chat import ChatApp
    from accord.client import check_agent_url

    if settings.as_json or settings.verbose:
        flag = "--json" if settings.as_json else "--verbose"
        click.echo(f"accord: chat is interactive: {flag} does not apply", err=True)
        sys.exit(EXIT_USAGE)
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        click.echo("accord: chat needs a terminal (use accord send or stream in scripts)", err=True)
        sys.exit(EXIT_USAGE)
    try:
        check_agent_url(settings.url)
    except ValueError as exc:
        click.echo(f"accord: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    participant = settings.headers.get("X-Participant-Id", "")
    app = ChatApp(
        lambda: _connect(settings), task_id=task_id or "", participant=participant, url=settings.url
    )
    app.run()
