"""The ``accord`` command."""

from accord.cli._main import main

__all__ = [
    "main",
]
