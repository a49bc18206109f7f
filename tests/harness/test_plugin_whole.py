"""A plugin in tiny-harness's layout loads whole in ``accord serve``: the example support desk
(examples/harness/plugins/support-desk) — a skill with its own MCP server, an ``mcp.json``
stdio server, a system prompt, a prompt extending it, an MCP hook — on a fake OpenAI-compatible
server whose request log shows what the model was given:

- the first request carries the system prompt (with the rule the prompt adds) and the
  skills' index, not the skill's body, and offers the plugin's MCP tools and the skill tools,
  not the skill's own tool;
- ``load_skill`` brings the body (the tool's result) and the skill's own tool (offered from
  the next request on), which works; the plugin's server writes to ``${PLUGIN_DATA}``;
- the MCP hook refuses a message before it is stored (UnsupportedOperation);
- which skills a task loaded is in its log: after ``kill -9``, and on another node on the
  same PostgreSQL database, the next turn's request carries the body and offers the tool;
- the example's own configuration runs as documented; a plugin's streamable-HTTP server (with
  its headers) connects and its tool works.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.harness.engine_kit import serving
from tests.harness.fake_openai import FakeOpenAI, Reply
from tests.harness.harness_proc import HarnessServer, start
from tests.harness.orders_mcp import orders_over_http

from accord.harness import HarnessSettings, from_settings
from accord.harness.models import FunctionModel
from accord.harness.tools import ToolContext

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples/harness/plugins/support-desk"
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json", "X-Participant-Id": "alice"}
BODY = "# Refunds"  # the skill's body begins so
SKILL_TOOL = "refunds_policy_lookup"
PLUGIN_SCHEMA = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"
MCP_SCHEMA = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"


def config(tmp: Path, base_url: str) -> Path:
    path = tmp / "harness.toml"
    path.write_text(
        "[harness]\n"
        'model = "openai:fake-model"\n'
        f'plugins = ["{EXAMPLE}"]\n'
        f'plugin_data = "{tmp / "data"}"\n'
        f'[harness.openai]\nbase_url = "{base_url}"\n'
    )
    return path


def rpc(server: HarnessServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer: dict[str, Any] = httpx.post(server.url, json=body, headers=HEADERS, timeout=60).json()
    return answer


def send(server: HarnessServer, text: str, task_id: str = "") -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if task_id:
        message["taskId"] = task_id
    answer = rpc(server, "SendMessage", {"message": message})
    assert "result" in answer, answer
    task: dict[str, Any] = answer["result"]["task"]
    return task


def said(task: dict[str, Any]) -> str:
    return str(task["status"]["message"]["parts"][0]["text"])


def system(request: dict[str, Any]) -> str:
    [first, *_] = request["messages"]
    assert first["role"] == "system"
    return str(first["content"])


def tools(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


def tool_results(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def test_a_tiny_harness_plugin_loads_whole(tmp_path: Path, fake: FakeOpenAI) -> None:
    fake.replies.extend(
        [
            Reply([], tool_calls=[("c1", "load_skill", {"name": "refunds"})]),
            Reply(
                [],
                tool_calls=[
                    ("c2", SKILL_TOOL, {"item": "blender"}),
                    ("c3", "orders_get_order", {"order_id": 48213}),
                ],
            ),
            Reply(["A refund or a replacement: which would you like?"]),
        ]
    )
    server = start(tmp_path, f"sqlite:///{tmp_path / 't.db'}", config(tmp_path, fake.base_url))
    try:
        task = send(server, "my blender arrived cracked")
        assert said(task) == "A refund or a replacement: which would you like?"
        first, second, third = fake.requests
        # The first request: the system prompt, the rule a prompt adds to its section, the
        # skills' index — not the skill's body; the plugin's tools, the skill tools, not the
        # skill's own.
        prompt = system(first)
        assert prompt.startswith("## role\n\nYou are the support desk of an online shop.")
        assert "## rules\n\nBe brief and kind. Ask before you refund.\n\nNever ask a customer " in (
            prompt
        )
        assert "- refunds: Decide and carry out a refund for a damaged or missing order" in prompt
        assert BODY not in json.dumps(first)
        offered = tools(first)
        assert {"orders_get_order", "orders_refund", "load_skill", "unload_skill"} <= offered
        assert {"list_skills", "list_skill_resources", "load_skill_resource"} <= offered
        assert SKILL_TOOL not in offered
        # load_skill brought the body (its result), and the skill's tool from then on.
        assert tool_results(second)["c1"].startswith(
            f'<untrusted source="tool:load_skill">\n{BODY}'
        )
        assert SKILL_TOOL in tools(second)
        results = tool_results(third)
        assert "damaged on arrival: a full refund or a replacement" in results["c2"]
        assert '"item": "blender"' in results["c3"]
        # The plugin's orders server wrote to the plugin's data directory.
        ledger = tmp_path / "data/support-desk/orders-ledger.jsonl"
        assert [json.loads(line)["tool"] for line in ledger.read_text().splitlines()] == [
            "get_order"
        ]
        # The skill is the task's, in its log.
        got = rpc(server, "GetTask", {"id": task["id"]})["result"]
        assert got["metadata"]["accord.harness/skills"] == {"loaded": ["refunds"]}
        # The MCP hook refuses a message asking for a password, before it is stored.
        message = {
            "messageId": uuid.uuid4().hex,
            "role": "ROLE_USER",
            "taskId": task["id"],
            "parts": [{"text": "what is my password?"}],
        }
        refused = rpc(server, "SendMessage", {"message": message})["error"]
        assert refused["code"] == -32004
        assert refused["message"] == "message not accepted: we never ask for or send passwords"
        after = rpc(server, "GetTask", {"id": task["id"]})["result"]
        assert len(after["history"]) == len(got["history"])
    finally:
        server.stop()


def test_loaded_skills_survive_kill_9_and_are_there_on_another_node(
    tmp_path: Path, fake: FakeOpenAI, pg_url: str
) -> None:
    settings = config(tmp_path, fake.base_url)
    a = start(tmp_path, pg_url, settings, name="a", grpc=False)
    b = start(tmp_path, pg_url, settings, name="b", grpc=False)
    try:
        fake.replies.extend(
            [Reply([], tool_calls=[("c1", "load_skill", {"name": "refunds"})]), Reply(["Loaded."])]
        )
        task = send(a, "I want a refund")
        assert said(task) == "Loaded."
        a.kill()
        for server, text in ((b, "on another node"), (None, "after kill -9")):
            if server is None:
                server = a = start(tmp_path, pg_url, settings, name="a-again", grpc=False)
            asked = len(fake.requests)
            fake.replies.append(Reply([f"ok, {text}"]))
            assert said(send(server, text, task["id"])) == f"ok, {text}"
            [request] = fake.requests[asked:]
            # The turn's request carries the loaded skill's body and offers its tool.
            assert f"Skill refunds (loaded):\n{BODY}" in system(request), text
            assert SKILL_TOOL in tools(request), text
    finally:
        a.stop()
        b.stop()


def test_the_support_desk_example_runs_as_documented(tmp_path: Path) -> None:
    # The example as it is, its paths made absolute so that it runs here (its plugin data
    # directory is then in the working directory).
    text = (ROOT / "examples/harness/support-desk.toml").read_text()
    text = text.replace('"examples/', f'"{ROOT}/examples/').replace(
        "scripted:examples/", f"scripted:{ROOT}/examples/"
    )
    settings = tmp_path / "support-desk.toml"
    settings.write_text(text.replace('plugin_data = "plugin-data"', f'plugin_data = "{tmp_path}"'))
    server = start(tmp_path, "memory://", settings, grpc=False)
    try:
        first = send(server, "my blender order 48213 arrived cracked")
        assert said(first).endswith("full refund or a replacement: which would you like?")
        assert first["metadata"]["accord.harness/skills"] == {"loaded": ["refunds"]}
        done = send(server, "a refund please", first["id"])
        assert said(done) == "Done: order 48213 is refunded in full."
    finally:
        server.stop()
    ledger = (tmp_path / "support-desk/orders-ledger.jsonl").read_text().splitlines()
    assert [json.loads(line)["tool"] for line in ledger] == ["get_order", "refund"]


async def test_a_plugins_streamable_http_server_connects_with_its_headers(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    with orders_over_http(ledger) as url:
        root = tmp_path / "web"
        root.mkdir()
        (root / "plugin.json").write_text(json.dumps({"$schema": PLUGIN_SCHEMA, "name": "web"}))
        server = {"type": "streamable-http", "url": url, "headers": {"X-Shop": "north"}}
        servers = {"$schema": MCP_SCHEMA, "mcpServers": {"shop": server}}
        (root / "mcp.json").write_text(json.dumps(servers))
        settings = HarnessSettings(model="main", plugins=(str(root),), plugin_data=str(tmp_path))
        agent = from_settings(settings, {"main": FunctionModel(lambda c: "ok")})
        async with serving(agent):
            tool = agent._turn_tools().get("shop_get_order")
            assert tool is not None and tool.idempotent is False  # (no annotation says so)
            outcome = await tool.call({"order_id": 48213}, ToolContext(task_id="t"))
    assert '"item": "blender"' in outcome.content
    assert [json.loads(line)["tool"] for line in ledger.read_text().splitlines()] == ["get_order"]
