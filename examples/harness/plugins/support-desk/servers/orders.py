"""The support desk's orders service, an MCP server over stdio (the plugin's ``mcp.json``
starts it with the interpreter running accord). ``get_order`` only reads (its annotation says
so: safe to run twice); ``refund`` acts. Each call is appended to ``$ORDERS_LEDGER`` (the
plugin's data directory, ``${PLUGIN_DATA}``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

ORDERS = {48213: {"item": "blender", "price": 89.0, "note": "arrived cracked"}}

server = MCPServer("orders")


def _ledger(tool: str, **arguments: object) -> None:
    path = Path(os.environ.get("ORDERS_LEDGER", "orders-ledger.jsonl"))
    with path.open("a") as ledger:
        ledger.write(json.dumps({"tool": tool, "at": time.time(), **arguments}) + "\n")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def get_order(order_id: int) -> str:
    """Look up an order by its number: item, price and any note."""
    _ledger("get_order", order_id=order_id)
    order = ORDERS.get(order_id)
    if order is None:
        raise ToolError(f"no order {order_id}")
    return json.dumps({"order_id": order_id, **order})


@server.tool()
def refund(order_id: int, reason: str) -> str:
    """Refund an order in full."""
    _ledger("refund", order_id=order_id, reason=reason)
    return f"refunded order {order_id}: {reason}"


if __name__ == "__main__":
    server.run("stdio")
