"""An orders service as an MCP server, for the harness demo and its tests.

    python examples/harness/orders_server.py                   # stdio
    python examples/harness/orders_server.py --http 8765       # streamable HTTP at /mcp

Every call is appended to a ledger file (``$ORDERS_LEDGER``, default ``orders-ledger.jsonl``),
one JSON line each, so a test can prove what ran and how often. ``get_order`` reads (safe to
run twice); ``refund`` and ``ship_replacement`` act (never twice). While a file named by
``$ORDERS_SLOW`` exists, ``refund`` waits (a window to kill the server's caller mid-call),
and writes ``waiting`` in that file when it starts to (so a test knows the call is running).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

ORDERS = {
    48213: {"item": "blender", "price": 89.0, "status": "delivered", "note": "arrived cracked"},
    51007: {"item": "kettle", "price": 39.0, "status": "shipped", "note": ""},
}

server = MCPServer("orders")


def _ledger(tool: str, **arguments: object) -> None:
    path = Path(os.environ.get("ORDERS_LEDGER", "orders-ledger.jsonl"))
    with path.open("a") as ledger:
        ledger.write(json.dumps({"tool": tool, "at": time.time(), **arguments}) + "\n")


@server.tool()
def get_order(order_id: int) -> str:
    """Look up an order by its number: item, price, status and any note."""
    _ledger("get_order", order_id=order_id)
    order = ORDERS.get(order_id)
    if order is None:
        raise ToolError(f"no order {order_id}")  # (its message reaches the model)
    return json.dumps({"order_id": order_id, **order})


@server.tool()
async def refund(order_id: int, reason: str) -> str:
    """Refund an order in full (money goes back to the customer)."""
    slow = os.environ.get("ORDERS_SLOW")
    if slow and Path(slow).exists():
        Path(slow).write_text("waiting")
    while slow and Path(slow).exists():
        await asyncio.sleep(0.05)
    _ledger("refund", order_id=order_id, reason=reason)
    return f"refunded order {order_id}: {reason}"


@server.tool()
def ship_replacement(order_id: int) -> str:
    """Ship a replacement of an order's item."""
    _ledger("ship_replacement", order_id=order_id)
    return f"replacement for order {order_id} ships today"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
    args = parser.parse_args()
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run("stdio")
