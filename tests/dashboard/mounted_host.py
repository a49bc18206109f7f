"""A FastAPI application that mounts two accord servers (``uvicorn mounted_host:app``): the
echo agent under ``/agents/echo`` and the streamer under ``/agents/stream``, each with its
dashboard below its prefix, beside a page of the host's own at ``/``."""

from __future__ import annotations

from dashboard_agents import streamer
from fastapi import FastAPI

import accord
from accord.app import Settings

echoing = accord.asgi(Settings(store="memory://", agent="echo"))
streaming = accord.asgi(Settings(store="memory://"), streamer)
app = FastAPI(lifespan=accord.lifespan(echoing, streaming))


@app.get("/")
async def home() -> dict[str, str]:
    return {"agents": "/agents/echo, /agents/stream"}


app.mount("/agents/echo", echoing)
app.mount("/agents/stream", streaming)
