"""Printing for the ``accord`` commands: a console, tables that never cut a value, and a quiet
exit when the reader of the output goes away (``accord tasks list URL | head``)."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from rich.console import Console
from rich.measure import Measurement
from rich.table import Column, Table

# 128 + SIGPIPE: what a shell reports for a command whose output pipe was closed.
EXIT_CLOSED_PIPE = 141
_UNBOUNDED = 100_000


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich would exit with 1 (an A2A error for accord): let the command decide.
        raise BrokenPipeError


def console() -> Console:
    # Not a terminal (a pipe, a file): wide enough that lines are not wrapped.
    width = None if sys.stdout.isatty() else 500
    return _Console(soft_wrap=True, highlight=False, width=width)


def id_column(header: str) -> Column:
    """A column of identifiers: never wrapped, so an id can be copied in one piece."""
    return Column(header, no_wrap=True)


def print_table(out: Console, table: Table) -> None:
    """``table`` at least as wide as its widest unbreakable content: a narrow terminal wraps
    the lines rather than rich cutting or ellipsizing an id, a URL or a timestamp."""
    needed = Measurement.get(out, out.options.update_width(_UNBOUNDED), table).minimum
    width = out.width
    out.width = max(width, needed)
    try:
        out.print(table)
    finally:
        out.width = width


def exit_on_closed_pipe() -> NoReturn:
    """The reader stopped reading: send what is left to /dev/null (so that the final flush
    cannot fail again) and exit without a word."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(EXIT_CLOSED_PIPE)
