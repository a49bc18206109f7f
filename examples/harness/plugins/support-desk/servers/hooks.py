"""The support desk's policy hook, an MCP server (hooks.json's ``mcp`` transport): the harness
calls its tool ``hooks.message.received.pre`` with ``{"context": …}`` for every message a
participant sends, before anything of it is stored. It refuses a message that asks for a
password; its answer is a remote hook's: null passes, {"abort": {…}} refuses."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

server = MCPServer("support-desk-hooks")


@server.tool(name="hooks.message.received.pre")
def message_received(context: dict[str, Any]) -> dict[str, Any] | None:
    """Refuse messages that ask for a password."""
    parts = context.get("message", {}).get("parts", [])
    text = " ".join(str(part.get("text", "")) for part in parts).lower()
    if "password" in text:
        return {"abort": {"reason": "policy", "message": "we never ask for or send passwords"}}
    return None


if __name__ == "__main__":
    server.run("stdio")
