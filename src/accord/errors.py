"""The root of accord's errors: every exception accord raises on purpose descends from
:class:`AccordError` (the protocol's :class:`accord.wire._errors.A2AError`, the client's errors,
a refused setting, a missing extra …), so ``except AccordError`` catches them all, as
``except httpx.HTTPError`` does for httpx."""

from __future__ import annotations

import importlib.util


class AccordError(Exception):
    """Something accord refused or could not do; the message says what, in one line."""


class MissingExtra(AccordError, ImportError):
    """A feature was asked for whose optional dependencies are not installed: the message
    names the extra that brings them (``the harness needs accord[harness]: pip install
    'accord[harness]'``)."""

    def __init__(self, feature: str, extra: str) -> None:
        super().__init__(f"{feature} needs accord[{extra}]: pip install 'accord[{extra}]'")
        self.feature = feature
        self.extra = extra


# What each extra brings (pyproject.toml's optional dependencies), as importable modules.
EXTRAS: dict[str, tuple[str, ...]] = {
    "grpc": ("grpc", "grpc_status", "google.protobuf"),
    "postgres": ("asyncpg",),
    "harness": ("openai", "anthropic", "mcp", "yaml"),
    "chat": ("textual",),
    "uvicorn": ("uvicorn",),
    "otel": ("opentelemetry.sdk",),
}


def installed(extra: str) -> bool:
    """Whether the modules of ``extra`` can be imported."""
    for module in EXTRAS[extra]:
        try:
            if importlib.util.find_spec(module) is None:
                return False
        except (ImportError, ValueError):  # a parent package missing, or a broken one
            return False
    return True


def require(extra: str, feature: str) -> None:
    """Raise :class:`MissingExtra` unless ``extra`` is installed; ``feature`` names what
    needs it (``"the harness"``, ``"gRPC (grpc_port)"``)."""
    if not installed(extra):
        raise MissingExtra(feature, extra)
