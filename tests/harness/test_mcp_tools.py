"""MCP tools over stdio and streamable HTTP, against a real MCP server (the demo's orders
service) started by the test: the tools listed with provider-safe names, calls, a tool's own
failure as an error result, a server that is gone, and the settings' refusals."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from tests.harness.orders_mcp import ORDERS, orders_over_http

from accord.config import ConfigError
from accord.harness.tools import ToolContext
from accord.harness.tools._mcp import McpServer, McpServerSettings, parse

CONTEXT = ToolContext(task_id="t1", sender="alice")


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "ledger.jsonl"
    monkeypatch.setenv("ORDERS_LEDGER", str(path))
    return path


@pytest.fixture
def http_server(ledger: Path) -> Iterator[str]:
    with orders_over_http(ledger) as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
async def orders(request: pytest.FixtureRequest, ledger: Path) -> AsyncIterator[McpServer]:
    if request.param == "stdio":
        settings = McpServerSettings(
            name="orders",
            command=(sys.executable, str(ORDERS)),
            env=(("ORDERS_LEDGER", str(ledger)),),
            idempotent=frozenset({"get_order"}),
        )
    else:
        url = request.getfixturevalue("http_server")
        settings = McpServerSettings(name="orders", url=url, idempotent=frozenset({"get_order"}))
    server = McpServer(settings)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.mark.processes
async def test_the_servers_tools_are_offered_with_safe_names(orders: McpServer) -> None:
    tools = {tool.spec.name: tool for tool in orders.tools}
    assert set(tools) == {"orders_get_order", "orders_refund", "orders_ship_replacement"}
    assert tools["orders_get_order"].idempotent is True
    assert tools["orders_refund"].idempotent is False
    schema = tools["orders_refund"].spec.parameters
    assert set(schema["properties"]) == {"order_id", "reason"}
    assert "Refund an order" in tools["orders_refund"].spec.description


@pytest.mark.processes
async def test_calls_answer_and_reach_the_server(orders: McpServer, ledger: Path) -> None:
    tools = {tool.spec.name: tool for tool in orders.tools}
    found = await tools["orders_get_order"].call({"order_id": 48213}, CONTEXT)
    assert not found.error and json.loads(found.content)["item"] == "blender"
    refunded = await tools["orders_refund"].call({"order_id": 48213, "reason": "cracked"}, CONTEXT)
    assert refunded.content == "refunded order 48213: cracked"
    calls = [json.loads(line)["tool"] for line in ledger.read_text().splitlines()]
    assert calls == ["get_order", "refund"]


@pytest.mark.processes
async def test_a_failing_tool_is_an_error_result(orders: McpServer) -> None:
    tools = {tool.spec.name: tool for tool in orders.tools}
    missing = await tools["orders_get_order"].call({"order_id": 1}, CONTEXT)
    assert missing.error and "no order 1" in missing.content
    wrong = await tools["orders_get_order"].call({"order_id": "not a number"}, CONTEXT)
    assert wrong.error


@pytest.mark.processes
async def test_a_server_that_is_gone_is_an_error_result(orders: McpServer) -> None:
    tool = orders.tools[0]
    await orders.stop()
    gone = await tool.call({"order_id": 48213}, CONTEXT)
    assert gone.error and "not connected" in gone.content


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"command": ["x"]}, "h: harness.mcp[0].name: missing"),
        ({"name": "a"}, "h: harness.mcp[0]: give command (stdio) or url"),
        ({"name": "a", "command": ["x"], "url": "http://h/mcp"}, "h: harness.mcp[0]: give"),
        ({"name": "a", "url": "ftp://h"}, "h: harness.mcp[0].url: expected an absolute"),
        ({"name": "a", "command": ["x"], "timeout_s": 0}, "h: harness.mcp[0].timeout_s"),
        ({"name": "a", "command": ["x"], "colour": 1}, "h: harness.mcp[0].colour: unknown"),
    ],
)
def test_settings_refusals_name_the_setting(table: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse(table, "h: harness.mcp[0]")
    assert str(refused.value).startswith(says), str(refused.value)
