"""A click group whose subcommands are imported only when one of them runs.

``accord --help`` and ``accord --version`` then import neither the client (httpx, rich, the
wire model) nor the server, the store or gRPC, and answer at once.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click


@dataclass(frozen=True)
class LazyCommand:
    """Where a subcommand lives (``module:attribute``) and its one-line help for the listing."""

    target: str
    short_help: str

    def load(self) -> click.Command:
        module_name, _, attribute = self.target.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command), self.target
        return command


class LazyGroup(click.Group):
    """A group with eager subcommands (``add_command``) and lazy ones (``lazy=``)."""

    def __init__(self, *args: Any, lazy: Mapping[str, LazyCommand], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        lazy = self.lazy.get(cmd_name)
        if lazy is not None:
            return lazy.load()
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        """A command whose optional dependencies are missing says which extra to install,
        in one line (exit status 2)."""
        from accord.errors import MissingExtra

        try:
            return super().invoke(ctx)
        except MissingExtra as exc:
            click.echo(f"accord: {exc}", err=True)
            ctx.exit(2)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing of ``--help``, from the short helps given here: nothing is imported."""
        rows: list[tuple[str, str]] = []
        for name in self.list_commands(ctx):
            lazy = self.lazy.get(name)
            if lazy is not None:
                rows.append((name, lazy.short_help))
                continue
            command = super().get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(formatter.width)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
