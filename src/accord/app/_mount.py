"""accord in another application: ``accord.asgi(settings)`` is the whole server as an ASGI
app that a Starlette or FastAPI application mounts under a prefix, and
``accord.lifespan(*apps)`` runs their engines and stores with that application's lifespan
(docs/server.md, "Mounting it in another application")."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from accord.app._build import build_app
from accord.app._settings import Settings, load
from accord.config import ConfigError
from accord.server import A2AApplication


def asgi(
    settings: Settings | str | Path | None = None,
    agent: Any = None,
    **overrides: Any,
) -> A2AApplication:
    """The server ``settings`` describe (a :class:`Settings`, or the path of a TOML settings
    file; None: the defaults, ``ACCORD_CONFIG`` and ``ACCORD_*``), serving ``agent`` (default:
    the one the settings name), as an ASGI app to mount: JSON-RPC, HTTP+JSON, the card, the
    command surface, the dashboard, health and metrics below the prefix it is mounted at.
    ``overrides`` are settings by name (``store="sqlite:///a.db"``).

    Its cards name the URL it is reached at: ``public_url`` (the host application's origin,
    or its whole URL, prefix included) or else each request's scheme and ``Host``, then the
    prefix. gRPC needs a server of its own (``accord serve``): ``grpc_port`` is refused.
    ``processes`` other than 1 is refused: the host application's server decides how many
    processes run. Run it with ``lifespan=accord.lifespan(app, …)`` (or
    ``async with app.running()``)."""
    if settings is None or isinstance(settings, str | Path):
        chosen = load(str(settings) if settings is not None else None, overrides)
    else:
        try:
            chosen = dataclasses.replace(settings, **overrides)
        except TypeError as exc:
            raise ConfigError(f"accord.asgi: {exc}") from None
    if chosen.grpc_port is not None:
        raise ConfigError(
            "accord.asgi: grpc_port: a mounted app serves the HTTP bindings; gRPC needs a"
            " server of its own (accord serve)"
        )
    if chosen.processes != 1:
        raise ConfigError(
            f"accord.asgi: processes = {chosen.processes}: a mounted app runs in its host "
            "application's process; run that application's server with several workers "
            "instead (accord serve --processes serves accord alone)"
        )
    return build_app(chosen, agent)


def lifespan(
    *apps: A2AApplication,
) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    """A lifespan for the application that mounts ``apps`` (``Starlette(lifespan=…)``,
    ``FastAPI(lifespan=…)``): each app's engine and store open at startup, in order, and
    close at shutdown, in reverse."""

    @asynccontextmanager
    async def running(_host: Any) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for app in apps:
                await stack.enter_async_context(app.running())
            yield

    return running
