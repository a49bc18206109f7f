"""Plugins: a directory in the tiny-harness layout (the example plugin, and one written as
tiny-harness writes them) and an installed package's ``accord.plugins`` entry point load
their hooks and commands; a bad manifest refuses the plugin naming the file and the field,
and so does a component that cannot load (``accord serve`` exits non-zero saying so in one
line), unless ``plugins_strict = false``: then it is skipped with a logged reason."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.harness.engine_kit import ALICE, said, said_metadata, send, serving

from accord.config import ConfigError
from accord.harness import HarnessAgent
from accord.harness._build import from_settings
from accord.harness._settings import HarnessSettings, parse
from accord.harness.models import FunctionModel
from accord.wire._errors import A2AError
from accord.wire._model import TaskState

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples/harness/plugins/house-rules"
NAMESPACE = "io.github.madarauchiha-314.tiny-harness"
SCHEMA = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"
ACCORD = Path(sys.executable).with_name("accord")


def write_plugin(
    root: Path,
    manifest: Any = None,
    hooks: Any = None,
    commands: Any = None,
) -> Path:
    root.mkdir(parents=True)
    if manifest is None:
        manifest = {"$schema": SCHEMA, "name": root.name}
    (root / "plugin.json").write_text(
        manifest if isinstance(manifest, str) else json.dumps(manifest)
    )
    for name, content in (("hooks.json", hooks), ("commands.json", commands)):
        if content is not None:
            (root / NAMESPACE).mkdir(exist_ok=True)
            text = content if isinstance(content, str) else json.dumps(content)
            (root / NAMESPACE / name).write_text(text)
    return root


def settings(*plugins: Path | str, **more: Any) -> HarnessSettings:
    return HarnessSettings(model="main", plugins=tuple(str(p) for p in plugins), **more)


def built(*plugins: Path | str, strict: bool = True) -> HarnessAgent:
    """``from_settings`` with ``plugins``, its model answering "heard <text>"."""
    return from_settings(
        settings(*plugins, plugins_strict=strict),
        {"main": FunctionModel(lambda c: f"heard {c.text}")},
    )


async def test_the_example_plugin_loads_its_command_and_its_hook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)  # its hooks import examples.house_rules
    agent = built("examples/harness/plugins/house-rules")
    [card] = [e for e in agent.card_extensions() if e.params and "commands" in e.params]
    assert card.params["commands"][-1] == {
        "name": "shout",
        "description": "Say it in capitals (the one place where that is allowed)",
        "argument_hint": "<text>",
    }
    async with serving(agent) as engine:
        task = await send(engine, ALICE, "hello")
        with pytest.raises(A2AError) as refused:
            await send(engine, ALICE, "HELLO THERE", task.id)
        assert refused.value.message == "message not accepted: please do not shout"
        shouted = await send(engine, ALICE, "/shout hi", task.id)
        assert (said(shouted), said_metadata(shouted)) == ("HI!", {"command": "shout"})
        missing = await send(engine, ALICE, "/shout", task.id)
        assert said(missing) == "/shout: text is missing (usage: /shout <text>)"


TINY_HOOKS = {
    "hooks": [
        {"name": "audit", "priority": 5, "points": ["message.received.post"],
         "import_path": "plugin_hooks:audit"},
        {"name": "deploy-body", "points": ["command.invoked.in"],
         "import_path": "plugin_hooks:deploy"},
        {"name": "lint", "points": ["tool.invoked.pre"], "url": "https://hooks.example.com/"},
    ]
}  # fmt: skip
MCP_HOOK = {"name": "mcp-policy", "mcp": {"type": "stdio", "command": "${PLUGIN_ROOT}/srv"}}
TINY_COMMANDS = {
    "commands": [
        {"name": "deploy", "description": "Deploy", "argument_hint": "<env>",
         "hook": "deploy-body"},
    ]
}  # fmt: skip
PLUGIN_HOOKS = """
import msgspec
from accord.harness.hooks import CommandResult

heard = []

def audit(point, context):
    heard.append((point, context.sender, context.message["parts"][0]["text"]))

def deploy(point, context):
    reply = f"deploying to {context.arguments or 'nowhere'}"
    return msgspec.structs.replace(context, result=CommandResult(reply=reply))
"""


@pytest.fixture
def plugin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    (tmp_path / "modules").mkdir()
    (tmp_path / "modules/plugin_hooks.py").write_text(PLUGIN_HOOKS)
    monkeypatch.syspath_prepend(str(tmp_path / "modules"))
    import plugin_hooks

    yield plugin_hooks
    sys.modules.pop("plugin_hooks", None)


async def test_a_plugin_written_for_tiny_harness_loads_unchanged(
    tmp_path: Path, plugin_module: Any, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_plugin(
        tmp_path / "tiny",
        {"$schema": SCHEMA, "name": "tiny", "version": "0.1.0", "description": "d",
         "license": "Apache-2.0", "keywords": ["x"], "author": {"name": "n"},
         "extensions": {"io.github.madarauchiha-314.tiny-harness": {}}},
        TINY_HOOKS,
        TINY_COMMANDS,
    )  # fmt: skip
    (root / "skills/s").mkdir(parents=True)
    (root / "skills/s/SKILL.md").write_text("---\nname: s\ndescription: a skill\n---\n# s")
    caplog.set_level(logging.INFO, "accord.harness.plugins")
    agent = built(root)
    logged = [r.getMessage() for r in caplog.records]
    assert (
        "plugin tiny loaded from " + str(root) + ": /deploy, hook audit, hook lint, skill s"
    ) in logged
    assert not any("skipped" in line for line in logged)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert agent.skills.names == ("s",)
    assert "deploy" in agent.commands.names
    async with serving(agent) as engine:
        task = await send(engine, ALICE, "/deploy prod")
        assert said(task) == "deploying to prod"
        assert task.status.state is TaskState.INPUT_REQUIRED
        await send(engine, ALICE, "hello", task.id)
        assert plugin_module.heard == [
            ("message.received.post", "alice", "/deploy prod"),  # (a command is judged too)
            ("message.received.post", "alice", "hello"),
        ]


def test_an_installed_package_plugin_loads_by_its_entry_point_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "accord_audit-1.0.dist-info").mkdir(parents=True)
    (site / "accord_audit-1.0.dist-info/METADATA").write_text(
        "Metadata-Version: 2.1\nName: accord-audit\nVersion: 1.0\n"
    )
    (site / "accord_audit-1.0.dist-info/entry_points.txt").write_text(
        "[accord.plugins]\naccord-audit = accord_audit:setup\n"
        "packaged-dir = accord_audit:DIRECTORY\n"
    )
    write_plugin(
        site / "accord_audit_plugin",
        {"$schema": SCHEMA, "name": "packaged"},
        {"hooks": [{"name": "b", "points": ["command.invoked.in"],
                    "import_path": "accord_audit:body"}]},
        {"commands": [{"name": "packaged", "description": "From a directory", "hook": "b"}]},
    )  # fmt: skip
    (site / "accord_audit.py").write_text(
        "from pathlib import Path\n"
        "from accord.harness.commands import CommandSpec\n"
        "DIRECTORY = str(Path(__file__).parent / 'accord_audit_plugin')\n"
        "def setup(harness):\n"
        "    harness.commands.register(CommandSpec('audit', 'Audit it', arguments=()),\n"
        "                              lambda context: 'audited')\n"
        "def body(point, context):\n"
        "    return None\n"
    )
    monkeypatch.syspath_prepend(str(site))
    try:
        agent = built("accord-audit", "packaged-dir")
        assert {"audit", "packaged"} <= agent.commands.names
        with pytest.raises(ConfigError) as unknown:
            built("no-such-plugin")
        assert str(unknown.value).startswith("plugin 'no-such-plugin': no installed package")
    finally:
        sys.modules.pop("accord_audit", None)


BAD_MANIFESTS: list[tuple[str, Any, Any, Any, str]] = [
    ("plugin.json", '{"name": ', None, None, "plugin.json: not JSON"),
    ("plugin.json", {"name": "p"}, None, None, "plugin.json: $schema: expected"),
    ("plugin.json", {"$schema": SCHEMA}, None, None, "plugin.json: name: missing"),
    ("plugin.json", {"$schema": SCHEMA, "name": "Bad_Name"}, None, None,
     "plugin.json: name: expected at most 64 lower-case letters"),
    ("plugin.json", {"$schema": SCHEMA, "name": "p", "author": "me"}, None, None,
     "plugin.json: author: expected an object"),
    ("plugin.json", {"$schema": SCHEMA, "name": "p", "author": {"phone": "1"}}, None, None,
     "plugin.json: author.phone: unknown field"),
    ("plugin.json", {"$schema": SCHEMA, "name": "p", "version": 2}, None, None,
     "plugin.json: version: expected a string"),
    ("plugin.json", {"$schema": SCHEMA, "name": "p", "keywords": "k"}, None, None,
     "plugin.json: keywords: expected a list of strings"),
    ("hooks.json", None, ["x"], None, "hooks.json: expected a JSON object"),
    ("hooks.json", None, {"hook": []}, None, "hooks.json: hook: unknown field"),
    ("hooks.json", None, {"hooks": {}}, None, "hooks.json: hooks: expected a list"),
    ("commands.json", None, None, {"commands": 3}, "commands.json: commands: expected a list"),
]  # fmt: skip


@pytest.mark.parametrize(("file", "manifest", "hooks", "commands", "error"), BAD_MANIFESTS)
def test_a_bad_manifest_refuses_the_plugin_naming_the_file_and_the_field(
    tmp_path: Path, file: str, manifest: Any, hooks: Any, commands: Any, error: str
) -> None:
    root = write_plugin(tmp_path / "p", manifest, hooks, commands)
    with pytest.raises(ConfigError) as refused:
        built(root)
    where = root / file if file == "plugin.json" else root / NAMESPACE / file
    assert str(refused.value).startswith(str(where) + ":")
    assert error.split(": ", 1)[1] in str(refused.value)


def test_bad_components_are_skipped_with_a_logged_reason_when_not_strict(
    tmp_path: Path, plugin_module: Any, caplog: pytest.LogCaptureFixture
) -> None:
    hooks = {
        "hooks": [
            {"name": "two", "url": "https://a.example/", "import_path": "plugin_hooks:audit"},
            {"name": "gone", "import_path": "plugin_hooks:nothing"},
            {"name": "wrong-point", "points": ["command.invoked.pre"],
             "import_path": "plugin_hooks:deploy"},
            {"name": "fine", "points": ["turn.started.pre"], "import_path": "plugin_hooks:audit"},
            MCP_HOOK,
        ]
    }  # fmt: skip
    commands = {
        "commands": [
            {"name": "Deploy", "description": "d", "hook": "fine"},
            {"name": "ghost", "description": "d", "hook": "missing"},
            {"name": "misuse", "description": "d", "hook": "wrong-point"},
            {"name": "status", "description": "Mine", "hook": "fine"},
        ]
    }
    root = write_plugin(tmp_path / "faulty", hooks=hooks, commands=commands)
    caplog.set_level(logging.WARNING, "accord.harness.plugins")
    agent = built(root, strict=False)
    reasons = {
        r.getMessage().split(" skipped: ")[0]: r.getMessage().split(" skipped: ")[1]
        for r in caplog.records
    }
    assert reasons.keys() == {
        "plugin faulty: hook two",
        "plugin faulty: hook gone",
        "plugin faulty: hook mcp-policy",
        "plugin faulty: command Deploy",
        "plugin faulty: command ghost",
        "plugin faulty: command misuse",
        "plugin faulty: command status",
    }
    assert reasons["plugin faulty: hook two"].endswith(
        "hooks[0]: a hook needs exactly one of import_path, url or mcp"
    )
    assert "cannot import plugin_hooks:nothing" in reasons["plugin faulty: hook gone"]
    assert reasons["plugin faulty: hook mcp-policy"] == (
        "command '${PLUGIN_ROOT}/srv': variables do not expand in command"
    )
    assert reasons["plugin faulty: command Deploy"].endswith(
        "commands[0].name: expected [a-z][a-z0-9-]*, got 'Deploy'"
    )
    assert reasons["plugin faulty: command ghost"] == "no hook 'missing' in hooks.json"
    assert "must declare exactly points" in reasons["plugin faulty: command misuse"]
    # A hook a command claims never loads as an ordinary hook, even when that command fails.
    assert not any(e.name == "wrong-point" for e in agent.hooks.chain("command.invoked.pre"))
    # "fine" is /Deploy's and /status's hook: claimed, so not a turn.started hook either.
    assert not any(e.name == "fine" for e in agent.hooks.chain("turn.started.pre"))
    assert agent.commands.spec("status") is not None
    assert agent.commands.spec("status").description == "Show this task's status"  # type: ignore[union-attr]


def test_a_plugin_command_replaces_a_built_in_and_a_second_plugin_may_not(
    tmp_path: Path, plugin_module: Any, caplog: pytest.LogCaptureFixture
) -> None:
    def with_status(name: str) -> Path:
        return write_plugin(
            tmp_path / name,
            hooks={"hooks": [{"name": "body", "points": ["command.invoked.in"],
                              "import_path": "plugin_hooks:deploy"}]},
            commands={"commands": [{"name": "status", "description": f"{name}'s",
                                    "hook": "body"}]},
        )  # fmt: skip

    first, second = with_status("first"), with_status("second")
    # (Warnings only, whatever level an earlier test left the logger at: the first plugin's
    # "loaded" line is at INFO.)
    caplog.set_level(logging.WARNING, "accord.harness.plugins")
    with pytest.raises(ConfigError) as refused:
        built(first, second)
    assert str(refused.value).startswith(
        "plugin 'second': command 'status' cannot load: a command of that name is registered "
        "already"
    )
    agent = built(first, second, strict=False)
    assert [s.description for s in agent.commands.specs if s.name == "status"] == ["first's"]
    assert [s.name for s in agent.commands.specs].index("status") == 4  # its place kept
    [skipped] = [
        r.getMessage()
        for r in caplog.records
        if r.name == "accord.harness.plugins" and r.levelno >= logging.WARNING
    ]
    assert skipped == (
        "plugin second: command status skipped: a command of that name is registered already"
    )


def test_the_plugins_setting_names_directories_that_exist(tmp_path: Path) -> None:
    table = {"model": "scripted:x.json", "plugins": ["./nowhere"]}
    with pytest.raises(ConfigError) as missing:
        parse(table, "harness.toml")
    assert str(missing.value) == "harness.toml: harness.plugins[0]: no plugin directory ./nowhere"
    with pytest.raises(ConfigError) as timeout:
        parse({"model": "scripted:x.json", "hook_timeout_s": 0}, "harness.toml")
    assert str(timeout.value) == "harness.toml: harness.hook_timeout_s: must be more than 0"


@pytest.mark.processes
def test_accord_serve_refuses_a_bad_manifest_in_one_line(tmp_path: Path) -> None:
    root = write_plugin(tmp_path / "bad", {"$schema": SCHEMA, "name": "Bad Name"})
    script = tmp_path / "script.json"
    script.write_text("[]")
    config = tmp_path / "harness.toml"
    config.write_text(f'[harness]\nmodel = "scripted:{script}"\nplugins = ["{root}"]\n')
    done = subprocess.run(
        [str(ACCORD), "serve", "--agent", "harness", "--config", str(config),
         "--store", "memory://", "--port", "0"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"accord: {root / 'plugin.json'}: name: expected at most 64 lower-case letters, digits, "
        "'.' and '-' (starting and ending with a letter or digit), got 'Bad Name'"
    ]


# A policy skipped is a hole: a component that cannot load stops the start.
UNLOADABLE: list[tuple[str, dict[str, Any], Any, str]] = [
    ("an import that fails",
     {"name": "dlp", "points": ["message.received.pre"], "import_path": "plugin_hooks:gone"},
     None,
     "plugin 'strict': hook 'dlp' cannot load: cannot import plugin_hooks:gone: module "
     "'plugin_hooks' has no attribute 'gone'"),
    ("a URL the SSRF guard refuses",
     {"name": "dlp", "points": ["message.received.pre"], "url": "http://169.254.169.254/"},
     None,
     "plugin 'strict': hook 'dlp' cannot load: its URL is refused: "),
    ("a command without its hook",
     {"name": "dlp", "points": ["message.received.pre"], "import_path": "plugin_hooks:audit"},
     {"name": "deploy", "description": "d", "hook": "deploy-body"},
     "plugin 'strict': command 'deploy' cannot load: no hook 'deploy-body' in hooks.json"),
    ("an MCP hook whose command expands a variable", MCP_HOOK, None,
     "plugin 'strict': hook 'mcp-policy' cannot load: command '${PLUGIN_ROOT}/srv': variables "
     "do not expand in command"),
    ("an entry of hooks.json that is wrong",
     {"name": "dlp", "points": ["message.received.pre"], "url": "https://a.example/",
      "import_path": "plugin_hooks:audit"},
     None,
     "plugin 'strict': hook 'dlp' cannot load: "),
    ("an unknown point",
     {"name": "dlp", "points": ["message.sent.pre"], "import_path": "plugin_hooks:audit"},
     None,
     "plugin 'strict': hook 'dlp' cannot load: 'message.sent.pre': no operation"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "hook", "command", "error"), UNLOADABLE, ids=[c[0] for c in UNLOADABLE]
)
def test_a_component_that_cannot_load_refuses_the_plugin_naming_it_and_why(
    tmp_path: Path, plugin_module: Any, case: str, hook: Any, command: Any, error: str
) -> None:
    commands = {"commands": [command]} if command is not None else None
    root = write_plugin(tmp_path / "strict", hooks={"hooks": [hook]}, commands=commands)
    with pytest.raises(ConfigError) as refused:
        built(root)
    line = str(refused.value)
    assert line.startswith(error)
    assert line.endswith("harness.plugins_strict = false skips it instead)")
    assert "\n" not in line


def test_plugins_strict_is_a_setting_on_by_default() -> None:
    assert parse({"model": "scripted:x.json"}).plugins_strict is True
    assert parse({"model": "scripted:x.json", "plugins_strict": False}).plugins_strict is False
    with pytest.raises(ConfigError) as wrong:
        parse({"model": "scripted:x.json", "plugins_strict": "maybe"}, "harness.toml")
    assert str(wrong.value).startswith("harness.toml: harness.plugins_strict: expected true or")


SERVE_UNLOADABLE = [UNLOADABLE[0], UNLOADABLE[1], UNLOADABLE[2]]


@pytest.mark.parametrize(
    ("case", "hook", "command", "error"), SERVE_UNLOADABLE, ids=[c[0] for c in SERVE_UNLOADABLE]
)
@pytest.mark.processes
def test_accord_serve_refuses_to_start_without_a_component_of_a_plugin(
    tmp_path: Path, plugin_module: Any, case: str, hook: Any, command: Any, error: str
) -> None:
    commands = {"commands": [command]} if command is not None else None
    root = write_plugin(tmp_path / "strict", hooks={"hooks": [hook]}, commands=commands)
    done = _serve(tmp_path, root, strict=None)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("accord: " + error)
    assert line.endswith("harness.plugins_strict = false skips it instead)")


@pytest.mark.processes
def test_accord_serve_with_plugins_strict_off_serves_without_it_and_warns(
    tmp_path: Path, plugin_module: Any
) -> None:
    from tests.harness.harness_proc import start, write_settings
    from tests.waiting import eventually

    hook = {"name": "dlp", "points": ["message.received.pre"], "import_path": "plugin_hooks:gone"}
    root = write_plugin(tmp_path / "lax", hooks={"hooks": [hook]})
    config = write_settings(tmp_path, f'plugins = ["{root}"]\nplugins_strict = false\n')
    server = start(tmp_path, "memory://", config, grpc=False)
    try:
        eventually(
            lambda: "plugin lax: hook dlp skipped: cannot import plugin_hooks:gone" in server.log(),
            "the warning",
        )
        card = httpx.get(f"{server.url}/.well-known/agent-card.json", timeout=10).json()
        assert card["capabilities"]["extensions"]  # serving, without the hook
    finally:
        server.stop()


def _serve(workdir: Path, plugin: Path, strict: bool | None) -> subprocess.CompletedProcess[str]:
    """``accord serve`` with ``plugin`` (and ``plugins_strict`` when given), to its end."""
    script = workdir / "script.json"
    script.write_text("[]")
    config = workdir / "harness.toml"
    setting = "" if strict is None else f"plugins_strict = {str(strict).lower()}\n"
    config.write_text(f'[harness]\nmodel = "scripted:{script}"\nplugins = ["{plugin}"]\n{setting}')
    environ = {**os.environ, "PYTHONPATH": str(workdir / "modules")}
    return subprocess.run(
        [str(ACCORD), "serve", "--agent", "harness", "--config", str(config),
         "--store", "memory://", "--port", "0"],
        capture_output=True, text=True, timeout=60, check=False, env=environ,
    )  # fmt: skip
