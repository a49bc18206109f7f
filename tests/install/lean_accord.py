"""``accord`` as a lean install has it (``pip install accord``, no extras): the modules the
extras bring cannot be imported. Run as ``python lean_accord.py ARGS…``, like ``accord ARGS…``."""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

# What the extras bring (pyproject.toml): grpc, postgres, harness, chat, uvicorn, otel.
EXTRA_MODULES = (
    "grpc",
    "grpc_status",
    "google.protobuf",
    "google.rpc",
    "asyncpg",
    "openai",
    "anthropic",
    "mcp",
    "yaml",
    "textual",
    "uvicorn",
    "opentelemetry.sdk",
    "opentelemetry.exporter",
)


class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if any(name == m or name.startswith(m + ".") for m in EXTRA_MODULES):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if __name__ == "__main__":
    sys.meta_path.insert(0, NotInstalled())
    from accord.cli._main import main

    sys.argv = ["accord", *sys.argv[1:]]
    main()
