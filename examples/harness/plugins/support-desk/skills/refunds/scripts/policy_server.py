"""The refunds skill's own MCP server: it connects when a task loads the skill (its
``mcp.json`` sits in the skill's directory, which is its ``${PLUGIN_ROOT}``)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

POLICY = {
    "blender": "damaged on arrival: a full refund or a replacement, the customer's choice",
}

server = MCPServer("policy")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(item: str) -> str:
    """The refund policy for an item."""
    return POLICY.get(item, "a refund within 30 days of delivery, minus shipping")


if __name__ == "__main__":
    server.run("stdio")
