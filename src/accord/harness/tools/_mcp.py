"""MCP servers' tools, through the official ``mcp`` package: over stdio (a command accord
starts) or streamable HTTP (a URL).

::

    [[harness.mcp]]
    name = "orders"
    command = ["python", "orders_server.py"]   # stdio (python: the one running accord);
                                               # or  url = "http://127.0.0.1:8000/mcp"
    idempotent = ["get_order"]                 # tools safe to run twice
    timeout_s = 60                             # per call

A server's tools are offered to the model as ``<server>_<tool>``. A tool that fails, times out
or whose server is gone gives the model an error result, never a failed turn. The server's
answer is text the model reads as untrusted data.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from accord import config as check
from accord.config import ConfigError
from accord.errors import AccordError
from accord.harness._transcript import ToolSpec
from accord.harness.tools._base import ToolContext, ToolOutcome, safe_name

log = logging.getLogger("accord.harness.mcp")

KNOWN = ("name", "command", "url", "idempotent", "timeout_s", "env")


@dataclass(frozen=True, slots=True)
class McpServerSettings:
    name: str
    command: tuple[str, ...] = ()
    url: str = ""
    idempotent: frozenset[str] = frozenset()
    timeout_s: float = 60.0
    env: tuple[tuple[str, str], ...] = ()
    # A plugin's server (accord.harness.plugins): a stdio server's working directory, a
    # streamable-HTTP server's request headers, and whether its tools' own annotations
    # (idempotentHint, readOnlyHint) say which are safe to run twice.
    cwd: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    annotated: bool = False
    # Where it was declared, for errors ("harness.mcp", "plugin p: mcp.json").
    origin: str = "harness.mcp"


def parse(value: Any, where: str) -> McpServerSettings:
    fields = check.table(value, where, KNOWN)
    if "name" not in fields:
        raise ConfigError(f"{where}.name: missing")
    name = check.text(fields["name"], f"{where}.name", empty=False)
    command = tuple(check.texts(fields.get("command", []), f"{where}.command"))
    url = check.url(fields["url"], f"{where}.url") if "url" in fields else ""
    if bool(command) == bool(url):
        raise ConfigError(f"{where}: give command (stdio) or url (streamable HTTP), one of them")
    timeout = check.number(fields.get("timeout_s", 60.0), f"{where}.timeout_s")
    if timeout <= 0:
        raise ConfigError(f"{where}.timeout_s: must be more than 0")
    env = fields.get("env", {})
    if not isinstance(env, dict):
        raise check.refuse(f"{where}.env", "a table of strings", env)
    return McpServerSettings(
        name=name,
        command=command,
        url=url,
        idempotent=frozenset(check.texts(fields.get("idempotent", []), f"{where}.idempotent")),
        timeout_s=timeout,
        env=tuple((k, check.text(v, f"{where}.env.{k}")) for k, v in env.items()),
    )


class McpTool:
    """One tool of a connected server."""

    def __init__(self, server: McpServer, remote_name: str, spec: ToolSpec, idempotent: bool):
        self.server = server
        self.remote_name = remote_name
        self.spec = spec
        self.idempotent = idempotent

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        return await self.server.call(self.remote_name, arguments)


class McpServer:
    """A connection to one MCP server: :meth:`start` connects and lists its tools.

    The connection lives in a task of its own, which enters and leaves the MCP client (its
    transport is an anyio task group, which must be left by the task that entered it); calls
    are made from any task."""

    def __init__(self, settings: McpServerSettings) -> None:
        self.settings = settings
        self.tools: list[McpTool] = []
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def start(self) -> None:
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._owner = asyncio.create_task(self._hold(ready), name=f"mcp:{self.settings.name}")
        await ready  # raises what connecting raised

    async def stop(self) -> None:
        owner, self._owner = self._owner, None
        if owner is not None:
            self._stop.set()
            await asyncio.gather(owner, return_exceptions=True)

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        from mcp import Client, StdioServerParameters

        settings = self.settings
        target: Any
        if settings.command:
            target = StdioServerParameters(
                command=_interpreter(settings.command[0]),
                args=list(settings.command[1:]),
                env=dict(settings.env) or None,
                cwd=settings.cwd or None,
            )
        elif settings.headers:
            target = _with_headers(settings.url, dict(settings.headers))
        else:
            target = settings.url
        try:
            async with Client(target, read_timeout_seconds=settings.timeout_s) as client:
                listed = await client.list_tools()
                self.tools = [self._tool(tool) for tool in listed.tools]
                self._client = client
                log.info("MCP server %s: %d tools", settings.name, len(self.tools))
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError):
                log.warning("MCP server %s: the connection ended: %s", settings.name, exc)
        finally:
            self._client = None

    def _tool(self, tool: Any) -> McpTool:
        return McpTool(
            self,
            tool.name,
            ToolSpec(
                name=safe_name(self.settings.name, tool.name),
                description=tool.description or "",
                parameters=dict(tool.input_schema or {"type": "object"}),
            ),
            tool.name in self.settings.idempotent
            or (self.settings.annotated and _annotated_idempotent(tool)),
        )

    async def call(self, remote_name: str, arguments: dict[str, Any]) -> ToolOutcome:
        try:
            result = await self.call_raw(remote_name, arguments)
        except TimeoutError:
            return ToolOutcome(
                f"{remote_name} gave no answer within {self.settings.timeout_s:g} s", error=True
            )
        except McpUnavailable as exc:
            return ToolOutcome(str(exc), error=True)
        except Exception as exc:  # the server's failure is the model's to hear of
            return ToolOutcome(f"{remote_name} failed: {type(exc).__name__}: {exc}", error=True)
        return ToolOutcome(_text(result), error=bool(result.is_error)).bounded()

    async def call_raw(self, remote_name: str, arguments: dict[str, Any]) -> Any:
        """The server's CallToolResult (TimeoutError past ``timeout_s``; McpUnavailable
        while it is not connected; what the call raised)."""
        if self._client is None:
            raise McpUnavailable(f"MCP server {self.settings.name} is not connected")
        async with asyncio.timeout(self.settings.timeout_s):
            return await self._client.call_tool(remote_name, arguments)


class McpUnavailable(AccordError, ConnectionError):
    """The MCP server is not connected (it never was, or its connection ended)."""


def _annotated_idempotent(tool: Any) -> bool:
    annotations = getattr(tool, "annotations", None)
    if annotations is None:
        return False
    hints = (getattr(annotations, key, None) for key in ("idempotent_hint", "read_only_hint"))
    return any(hint is True for hint in hints)


@asynccontextmanager
async def _with_headers(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """The streamable-HTTP transport to ``url``, sending ``headers`` with every request."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def _interpreter(command: str) -> str:
    """``python``/``python3`` is the Python that runs accord: a server written in Python
    finds the packages accord's own environment has (mcp, say)."""
    return sys.executable if command in ("python", "python3") else command


def _text(result: Any) -> str:
    """A tool result's content as text: text blocks as they are, other blocks described."""
    pieces: list[str] = []
    for block in result.content:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            pieces.append(text)
        else:
            pieces.append(f"[{getattr(block, 'type', 'content')} block]")
    if not pieces and result.structured_content is not None:
        pieces.append(json.dumps(result.structured_content, default=str))
    return "\n".join(pieces)
