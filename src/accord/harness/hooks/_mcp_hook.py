"""Hook executors behind an MCP server (a plugin's ``hooks.json`` entry with ``mcp``), as
tiny-harness's MCP hooks speak: for each point it runs on, the harness calls the server's tool
``hooks.<operation>.<phase>`` with ``{"context": {…}}``; the reply — the tool's structured
content (unwrapped from the ``{"result": …}`` the MCP SDKs wrap a return value in), else its
first text block as JSON — is what a remote hook's JSON-RPC result is:
``null`` passes, ``{"context": {…}}`` replaces, ``{"abort": {"reason", "message"?}}`` refuses.

The server is connected as the harness starts (one that cannot be stops the start) and kept
for every call. A call that fails, times out, answers with an error or with something else
than that reply fails closed: the operation is refused naming the hook.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable
from typing import Any, Protocol

import msgspec

from accord.harness.hooks._base import Context, HookFailure, Registration
from accord.harness.hooks._jsonrpc import parse_result

log = logging.getLogger("accord.harness.hooks")


class ToolCaller(Protocol):
    """A connected MCP server (accord.harness.tools._mcp.McpServer)."""

    async def call_raw(self, remote_name: str, arguments: dict[str, Any]) -> Any: ...


class McpHookExecutor(Registration):
    def __init__(
        self,
        name: str,
        server: ToolCaller,
        *,
        priority: int,
        points: Iterable[str] | None = None,
        timeout_s: float,
    ) -> None:
        super().__init__(name, priority, points)
        self.server = server
        self.timeout_s = timeout_s

    async def handle(self, point: str, context: Context) -> Context | None:
        tool = f"hooks.{point}"
        try:
            async with asyncio.timeout(self.timeout_s):
                result = await self.server.call_raw(tool, {"context": msgspec.to_builtins(context)})
        except TimeoutError:
            raise self._failed(f"no answer within {self.timeout_s:g} s") from None
        except Exception as exc:
            raise self._failed("unreachable", f"{tool}: {type(exc).__name__}: {exc}") from None
        if getattr(result, "is_error", False):
            raise self._failed(f"its tool {tool} answered with an error", _texts(result)[:200])
        payload: Any = getattr(result, "structured_content", None)
        if isinstance(payload, dict) and set(payload) == {"result"}:
            payload = payload["result"]  # (an MCP SDK's wrapping of a tool's return value)
        if payload is None:
            texts = _texts(result)
            if not texts.strip() or texts.strip() == "null":
                return None
            try:
                payload = json.loads(texts)
            except ValueError:
                raise self._failed("answered with something other than JSON") from None
        return parse_result(self.name, context, payload)

    def _failed(self, detail: str, logged: str = "") -> HookFailure:
        log.warning("MCP hook %r failed: %s", self.name, logged or detail)
        return HookFailure(self.name, detail)


def _texts(result: Any) -> str:
    """The tool result's first text block."""
    for block in getattr(result, "content", None) or ():
        text = getattr(block, "text", None)
        if isinstance(text, str):
            return text
    return ""
