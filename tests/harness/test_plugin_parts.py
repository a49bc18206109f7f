"""The parts of a tiny-harness plugin besides hooks and commands, by tiny-harness's rules:

- skills: ``SKILL.md``'s front matter checked as Agent Skills says; the five skill tools, with
  tiny-harness's names and arguments; which skills a task loaded recorded in its log, the
  bodies of those in the prompt of its later turns, none before;
- ``mcp.json``: the file's shape, paths kept inside the plugin, ``${PLUGIN_ROOT}`` and
  ``${PLUGIN_DATA}`` expanded in args, env and cwd only, never in a command;
- prompts: ``systemprompt.md`` replacing the system prompt, ``extends`` adding to a section;
- MCP hooks: the replies of a real MCP server (in this process) read as a remote hook's.

(The servers running and the plugin whole in ``accord serve``: test_plugin_whole.py.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.harness.engine_kit import ALICE, said, send, serving
from tests.harness.test_turn_tools import Script

from accord.config import ConfigError
from accord.harness import HarnessAgent, ToolCall
from accord.harness._build import from_settings
from accord.harness._settings import HarnessSettings
from accord.harness.hooks import HookAbort, HookFailure, MessageReceived
from accord.harness.hooks._mcp_hook import McpHookExecutor
from accord.harness.models import FunctionModel
from accord.harness.plugins._prompts import Prompt, extended
from accord.harness.tools._mcp import _interpreter

NAMESPACE = "io.github.madarauchiha-314.tiny-harness"
SCHEMA = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"
MCP_SCHEMA = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"
SKILL = "---\nname: {name}\ndescription: {description}\n---\n{body}"


def plugin(root: Path, files: dict[str, str | dict[str, Any]], name: str = "") -> Path:
    """A plugin directory with ``files`` (path: text, or JSON) beside its plugin.json."""
    root.mkdir(parents=True)
    (root / "plugin.json").write_text(json.dumps({"$schema": SCHEMA, "name": name or root.name}))
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content if isinstance(content, str) else json.dumps(content))
    return root


def skill(name: str, description: str = "does things", body: str = "# Body\nsteps") -> str:
    return SKILL.format(name=name, description=description, body=body)


def built(tmp: Path, *plugins: Path, strict: bool = True, **more: Any) -> HarnessAgent:
    settings = HarnessSettings(
        model="main",
        plugins=tuple(str(p) for p in plugins),
        plugins_strict=strict,
        plugin_data=str(tmp / "data"),
        **more,
    )
    return from_settings(settings, {"main": FunctionModel(lambda c: "ok")})


def refusal(tmp: Path, files: dict[str, str | dict[str, Any]]) -> str:
    with pytest.raises(ConfigError) as refused:
        built(tmp, plugin(tmp / "p", files))
    return str(refused.value)


# --- skills -----------------------------------------------------------------------------------

BAD_SKILLS = [
    ("# no front matter", "no front matter"),
    ("---\nname: s\n---\nbody", "description: missing"),
    ("---\ndescription: d\n---\nbody", "name: missing"),
    ("---\nname: other\ndescription: d\n---\n", "name: 'other', but its directory is 's'"),
    ("---\nname: s\ndescription: d\ncolour: red\n---\n", "colour: unknown field"),
    ("---\nname: s\ndescription: ''\n---\n", "description: 1 to 1024 characters"),
    (f"---\nname: s\ndescription: {'x' * 1025}\n---\n", "description: 1 to 1024 characters"),
    ("---\nname: s\ndescription: d\nmetadata: [1]\n---\n", "metadata: a mapping of text"),
    ("---\nname: s\ndescription: [d\n---\n", "the front matter is not YAML"),
    ("---\nname: s\ndescription: d\nallowed-tools: 3\n---\n", "allowed-tools: names"),
]


@pytest.mark.parametrize(("text", "error"), BAD_SKILLS)
def test_a_skill_that_breaks_the_agent_skills_rules_cannot_load(
    tmp_path: Path, text: str, error: str
) -> None:
    reason = refusal(tmp_path, {"skills/s/SKILL.md": text})
    assert reason.startswith("plugin 'p': skill 's' cannot load: ")
    assert error in reason


def test_skills_load_with_their_fields_and_a_bad_name_is_refused(tmp_path: Path) -> None:
    text = (
        "---\nname: my-skill\ndescription: >\n  Does several\n  things.\nlicense: MIT\n"
        "metadata:\n  owner: ops\nallowed-tools: a b\n---\n\n# Steps\n"
    )
    agent = built(tmp_path, plugin(tmp_path / "p", {"skills/my-skill/SKILL.md": text}))
    loaded = agent.skills.get("my-skill")
    assert loaded is not None
    assert (loaded.description, loaded.body, loaded.license) == (
        "Does several things.",
        "# Steps\n",
        "MIT",
    )
    assert (loaded.metadata, loaded.allowed_tools, loaded.plugin) == (
        (("owner", "ops"),),
        ("a", "b"),
        "p",
    )
    assert agent.skills.index() == "- my-skill: Does several things."
    bad = refusal(tmp_path / "2", {"skills/My_Skill/SKILL.md": skill("My_Skill")})
    assert "name: 1 to 64 lower-case letters and digits" in bad


def test_a_skill_whose_directory_leads_out_of_the_plugin_cannot_load(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "s"
    outside.mkdir(parents=True)
    (outside / "SKILL.md").write_text(skill("s"))
    root = plugin(tmp_path / "p", {})
    (root / "skills").mkdir()
    (root / "skills" / "s").symlink_to(outside)
    with pytest.raises(ConfigError) as refused:
        built(tmp_path, root)
    assert "skill 's' cannot load: " in str(refused.value)
    assert "is outside" in str(refused.value)
    lenient = built(tmp_path, root, strict=False)
    assert lenient.skills.names == ()


class Turns(Script):
    """A scripted model (test_turn_tools's) that tells each call's tool results."""

    def results(self, index: int) -> list[tuple[str, bool]]:
        return [(s.content, s.error) for s in self.asked[index].steps if hasattr(s, "content")]


def call(tool: str, **arguments: Any) -> ToolCall:
    return ToolCall(tool, arguments)


SKILL_FILES: dict[str, str | dict[str, Any]] = {
    "skills/refunds/SKILL.md": skill("refunds", "Refund orders", "# Refunds\nby the policy"),
    "skills/refunds/references/policy.md": "full refunds within 30 days",
    "skills/refunds/assets/logo.png": "",
    "skills/other/SKILL.md": skill("other", "Something else"),
}


async def test_the_skill_tools_and_the_loaded_skills_in_the_tasks_log(tmp_path: Path) -> None:
    root = plugin(tmp_path / "p", SKILL_FILES)
    (root / "skills/refunds/assets/logo.png").write_bytes(b"\x89PNG\x00\xff")
    model = Turns(
        [call("list_skills"), call("load_skill", name="refunds"), call("load_skill", name="nope")],
        "Loaded.",
        [
            call("list_skill_resources", name="refunds"),
            call("load_skill_resource", name="refunds", kind="references", resource="policy.md"),
            call("load_skill_resource", name="refunds", kind="assets", resource="logo.png"),
            call("load_skill_resource", name="refunds", kind="secrets", resource="x"),
            call("load_skill_resource", name="refunds", kind="scripts", resource="../SKILL.md"),
            call("load_skill", name="refunds", extra=1),
            call("load_skill"),
        ],
        "Read.",
        [call("unload_skill", name="refunds"), call("unload_skill", name="refunds")],
        "Unloaded.",
        "Bare.",
    )
    settings = HarnessSettings(model="main", plugins=(str(root),), plugin_data=str(tmp_path / "d"))
    agent = from_settings(settings, {"main": FunctionModel(model)})
    async with serving(agent) as engine:
        task = await send(engine, ALICE, "a refund please")
        assert said(task) == "Loaded."
        first = model.asked[0]
        assert "- refunds: Refund orders\n- other: Something else" not in first.system_prompt
        assert "- other: Something else\n- refunds: Refund orders" in first.system_prompt
        assert "# Refunds" not in first.system_prompt
        names = {tool.name for tool in first.tools}
        assert {"list_skills", "load_skill", "unload_skill", "list_skill_resources"} <= names
        assert "load_skill_resource" in names
        assert model.results(1) == [
            ("- other: Something else\n- refunds: Refund orders", False),
            ("# Refunds\nby the policy", False),
            ("load_skill: no skill named 'nope' (skills: other, refunds)", True),
        ]
        assert task.metadata["accord.harness/skills"] == {"loaded": ["refunds"]}
        # The next turn: the loaded skill's body in the prompt's prefix.
        read = await send(engine, ALICE, "and the policy?", task.id)
        assert said(read) == "Read."
        assert model.asked[2].system_prompt.endswith(
            "Skill refunds (loaded):\n# Refunds\nby the policy"
        )
        assert model.results(3) == [
            ("- references/policy.md\n- assets/logo.png", False),
            ("full refunds within 30 days", False),
            ("load_skill_resource: assets/logo.png is not text (UTF-8)", True),
            ("load_skill_resource: kind is one of scripts, references, assets", True),
            ("load_skill_resource: skill 'refunds' has no resource scripts/../SKILL.md", True),
            ("load_skill: unknown argument 'extra'", True),
            ("load_skill: name is required text", True),
        ]
        unloaded = await send(engine, ALICE, "done with it", task.id)
        assert said(unloaded) == "Unloaded."
        assert model.results(5)[-2:] == [
            ("unloaded refunds", False),
            ("unload_skill: skill 'refunds' is not loaded", True),
        ]
        assert unloaded.metadata["accord.harness/skills"] == {"loaded": []}
        await send(engine, ALICE, "bye", task.id)
        assert "(loaded)" not in model.asked[-1].system_prompt


async def test_without_skills_no_skill_tools_are_offered(tmp_path: Path) -> None:
    model = Turns("hi")
    agent = from_settings(HarnessSettings(model="main"), {"main": FunctionModel(model)})
    async with serving(agent) as engine:
        await send(engine, ALICE, "hello")
    assert not {t.name for t in model.asked[0].tools} & {"list_skills", "load_skill"}
    assert "Skills you can load" not in model.asked[0].system_prompt


# --- mcp.json ---------------------------------------------------------------------------------


def mcp(**servers: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": MCP_SCHEMA, "mcpServers": servers}


def test_mcp_json_servers_expand_only_the_two_variables_and_stay_inside(tmp_path: Path) -> None:
    root = plugin(
        tmp_path / "p",
        {
            "bin/serve": "",
            "mcp.json": mcp(
                local={
                    "type": "stdio",
                    "command": "./bin/serve",
                    "args": ["--root", "${PLUGIN_ROOT}/x", "${PLUGIN_DATA}", "$HOME", "${OTHER}"],
                    "env": {"LEDGER": "${PLUGIN_DATA}/ledger", "KEEP": "${HOME}"},
                    "cwd": "${PLUGIN_DATA}/work",
                },
                py={"type": "stdio", "command": "python", "args": ["s.py"], "cwd": "./bin"},
                web={
                    "type": "streamable-http",
                    "url": "https://mcp.example/",
                    "headers": {"A": "b"},
                },
            ),
        },
    )
    agent = built(tmp_path, root)
    servers = {server.settings.name: server.settings for server in agent._mcp}
    data = (tmp_path / "data" / "p").resolve()
    here = root.resolve()
    local = servers["local"]
    assert local.command == (
        str(here / "bin/serve"), "--root", f"{here}/x", str(data), "$HOME", "${OTHER}",
    )  # fmt: skip
    assert dict(local.env) == {
        "LEDGER": f"{data}/ledger", "KEEP": "${HOME}", "PLUGIN_ROOT": str(here),
        "PLUGIN_DATA": str(data),
    }  # fmt: skip
    assert local.cwd == str(data / "work") and local.annotated
    assert servers["py"].command[0] == "python" and _interpreter("python") == sys.executable
    assert servers["py"].cwd == str(here / "bin")
    assert (servers["web"].url, servers["web"].headers) == ("https://mcp.example/", (("A", "b"),))
    assert data.is_dir()


BAD_SERVERS: list[tuple[dict[str, Any], str]] = [
    ({"type": "stdio", "command": "${PLUGIN_ROOT}/run"}, "variables do not expand in command"),
    ({"type": "stdio", "command": "./../run"}, "is outside"),
    ({"type": "stdio", "command": "run", "cwd": "/tmp"}, "cwd: ./-relative, or rooted in"),
    ({"type": "stdio", "command": "run", "cwd": "./../.."}, "is outside"),
    ({"type": "stdio", "command": "run", "cwd": "${PLUGIN_ROOT}/../x"}, "is outside"),
    ({"type": "stdio", "command": "run", "env": {"PLUGIN_ROOT": "/"}}, "set by the harness"),
    ({"type": "stdio", "command": "run", "shell": True}, "shell: unknown field"),
    ({"type": "stdio"}, "command: missing"),
    ({"type": "sse", "url": "https://mcp.example/sse"}, "legacy HTTP+SSE servers"),
    ({"type": "websocket", "url": "wss://x"}, "expected stdio, streamable-http or sse"),
]


@pytest.mark.parametrize(("server", "error"), BAD_SERVERS)
def test_an_mcp_server_that_breaks_the_rules_cannot_load(
    tmp_path: Path, server: dict[str, Any], error: str
) -> None:
    reason = refusal(tmp_path, {"mcp.json": mcp(s=server)})
    assert reason.startswith("plugin 'p': mcp server 's' cannot load: ")
    assert error in reason


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ({"mcpServers": {}}, "$schema: expected"),
        ({"$schema": MCP_SCHEMA}, "mcpServers: expected an object"),
        ({"$schema": MCP_SCHEMA, "mcpServers": {}, "x": 1}, "x: unknown field"),
    ],
)
def test_an_mcp_json_that_is_not_one_refuses_the_plugin(
    tmp_path: Path, content: dict[str, Any], error: str
) -> None:
    reason = refusal(tmp_path, {"mcp.json": content})
    assert reason.startswith(str(tmp_path / "p" / "mcp.json") + ": ") and error in reason


def test_an_mcp_json_that_leads_out_of_the_plugin_refuses_it(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps(mcp(s={"type": "stdio", "command": "x"})))
    root = plugin(tmp_path / "p", {})
    (root / "mcp.json").symlink_to(outside)
    with pytest.raises(ConfigError) as refused:
        built(tmp_path, root)
    assert str(refused.value).startswith(f"{root / 'mcp.json'}: ")
    assert "is outside" in str(refused.value)


def test_a_plugin_server_may_not_take_a_name_in_use(tmp_path: Path) -> None:
    first = plugin(tmp_path / "a", {"mcp.json": mcp(s={"type": "stdio", "command": "x"})})
    second = plugin(tmp_path / "b", {"mcp.json": mcp(s={"type": "stdio", "command": "y"})})
    with pytest.raises(ConfigError) as refused:
        built(tmp_path, first, second)
    assert (
        "plugin 'b': mcp server 's' cannot load: an MCP server named 's' is there already"
        in str(refused.value)
    )


# --- prompts ----------------------------------------------------------------------------------


def test_the_system_prompt_and_the_prompts_that_extend_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = plugin(
        tmp_path / "first",
        {
            f"{NAMESPACE}/systemprompt.md": (
                "Preamble.\n\n## Role\n\nA desk.\n\n## rules\n\nBe kind."
            ),
            f"{NAMESPACE}/prompts/rule.md": "---\nextends: RULES\n---\nNo passwords.",
            f"{NAMESPACE}/prompts/tone.md": "---\nextends: tone\n---\nWarm.",
            f"{NAMESPACE}/prompts/greeting.md": "---\nid: hello\n---\nHello there.",
        },
    )
    caplog.set_level("INFO", "accord.harness.plugins")
    agent = built(tmp_path, first, system_prompt="the operator's")
    assert agent.prompts.system_prompt == (
        "Preamble.\n\n## Role\n\nA desk.\n\n## rules\n\nBe kind.\n\nNo passwords.\n\n"
        "## tone\n\nWarm.\n"
    )
    hello = agent.prompts.get("hello")
    assert hello is not None and (hello.text, hello.extends, hello.plugin) == (
        "Hello there.\n",
        None,
        "first",
    )
    assert "plugin first: its system prompt replaces harness.system_prompt's" in caplog.messages
    second = plugin(tmp_path / "second", {f"{NAMESPACE}/prompts/x.md": "---\nid: hello\n---\nHi."})
    again = built(tmp_path, first, second)
    assert again.prompts.get("hello").text == "Hi.\n"  # type: ignore[union-attr]
    assert "plugin second: its prompt hello replaces plugin first's" in caplog.messages


def test_a_prompt_with_a_bad_front_matter_cannot_load(tmp_path: Path) -> None:
    reason = refusal(tmp_path, {f"{NAMESPACE}/prompts/p.md": "---\nextends: a\nmodel: b\n---\nx"})
    assert "prompt 'p' cannot load: " in reason and "model: unknown field of a prompt" in reason
    system = refusal(tmp_path / "2", {f"{NAMESPACE}/systemprompt.md": "---\nextends: a\n---\nx"})
    assert "system prompt 'systemprompt.md' cannot load: " in system


def test_extending_keeps_a_prompt_without_extensions_as_written() -> None:
    assert extended("  as written\n", [Prompt("p", "named\n")]) == "  as written\n"
    assert extended("", [Prompt("r", "x\n", "rules")]) == "## rules\n\nx\n"


# --- MCP hooks --------------------------------------------------------------------------------


class InProcess:
    """An MCP server of this process, called as the harness calls a hook's server."""

    def __init__(self, server: Any) -> None:
        self.server = server

    async def call_raw(self, name: str, arguments: dict[str, Any]) -> Any:
        from mcp import Client

        async with Client(self.server) as client:
            return await client.call_tool(name, arguments)


def hook_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("hooks")

    @server.tool(name="hooks.message.received.pre")
    def pre(context: dict[str, Any]) -> dict[str, Any] | None:
        text = context["message"]["parts"][0]["text"]
        if text == "abort":
            return {"abort": {"reason": "policy", "message": "not that"}}
        if text == "replace":
            message = {**context["message"], "parts": [{"text": "replaced"}]}
            return {"context": {**context, "message": message}}
        if text == "nonsense":
            return {"verdict": "yes"}
        if text == "fail":
            raise ValueError("broken")
        return None

    return server


def context(text: str) -> MessageReceived:
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}
    return MessageReceived(task_id="t", correlation_id="m1", attempt=1, sender="alice",
                           sender_role="reporter", message=message)  # fmt: skip


async def test_an_mcp_hooks_replies_are_a_remote_hooks() -> None:
    executor = McpHookExecutor(
        "policy", InProcess(hook_server()), priority=500, points=None, timeout_s=10
    )
    point = "message.received.pre"
    assert await executor.handle(point, context("hello")) is None
    replaced = await executor.handle(point, context("replace"))
    assert isinstance(replaced, MessageReceived) and replaced.message["parts"] == [
        {"text": "replaced"}
    ]
    with pytest.raises(HookAbort) as aborted:
        await executor.handle(point, context("abort"))
    assert (aborted.value.message, str(aborted.value.reason)) == ("not that", "policy")
    failing = [
        ("nonsense", "answered with a result other than"),
        ("fail", "its tool hooks.message.received.pre answered with an error"),
    ]
    for text, detail in failing:
        with pytest.raises(HookFailure) as failed:
            await executor.handle(point, context(text))
        assert detail in failed.value.detail
    with pytest.raises(HookFailure) as missing:
        await executor.handle("message.received.post", context("hello"))
    assert missing.value.detail.startswith("its tool hooks.message.received.post answered with")
