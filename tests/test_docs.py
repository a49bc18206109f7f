"""The documentation stands on its own and says what the code does: it links only to files in
the repository, its ``accord`` command lines use options that exist, its Python names import,
and what it says about serving an agent from the working directory holds."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import click
import httpx
import pytest
from tests.interop.accord_server_proc import accord_serve

from accord.cli._main import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES = [*DOCS, *(ROOT / "examples").rglob("*.py"), *(ROOT / "src").rglob("*.py")]
PACKAGES = ("wire", "core", "store", "bus", "engine", "push", "server", "client", "agents",
            "cli", "grpc", "surface", "dashboard", "chat")  # fmt: skip


def test_nothing_points_outside_the_repository() -> None:
    outside = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in SOURCES
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "../shared" in line or "shared/reference" in line
    ]
    assert outside == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_relative_links_name_files_in_the_repository(doc: Path) -> None:
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text())
    missing = [t for t in targets if not (doc.parent / t).resolve().is_relative_to(ROOT)]
    missing += [t for t in targets if not (doc.parent / t).exists()]
    assert missing == []


def _command_lines(text: str) -> list[str]:
    commands = "serve|card|send|stream|tasks|push|admin|contracts|keys|chat"
    pattern = rf"(?:^|[`$\s])(?:\.venv/bin/)?accord ((?:{commands})\b[^`#&|\n]*)"
    return [m.group(1) for m in re.finditer(pattern, text, re.M)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_command_lines_use_options_that_exist(doc: Path) -> None:
    ctx = click.Context(main)
    unknown = []
    for line in _command_lines(doc.read_text()):
        words = re.sub(r"[\[\]|…]", " ", line).split()
        command: click.Command = main
        rest = words
        while isinstance(command, click.Group) and rest:
            sub = command.get_command(ctx, rest[0])
            if sub is None:
                break
            command, rest = sub, rest[1:]
        options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        options.add("--help")
        unknown += [
            f"{line!r}: {w}"
            for w in rest
            if w.startswith("--") and w.split("=")[0].rstrip(".,;:)") not in options
        ]
    assert unknown == []


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for size in range(len(parts), 1, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:size]))
        except ImportError:
            continue
        try:
            for name in parts[size:]:
                found = getattr(found, name)
        except AttributeError:
            return False
        return True
    return False


def test_sqlite_urls_of_system_directories_are_absolute() -> None:
    """``sqlite:///var/lib/…`` is ``var/lib/…`` in the working directory: a system directory
    takes four slashes."""
    relative = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in DOCS
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"sqlite:///(var|etc|srv|opt|home|tmp)/", line)
    ]
    assert relative == []


def test_the_readmes_curl_example_sends_a_fresh_message_id() -> None:
    """A fixed ``messageId`` is a retry on a second run: the old task comes back."""
    readme = (ROOT / "README.md").read_text()
    example = readme[readme.index("curl -s -XPOST") :].split("```", 1)[0]
    assert '"messageId":"\'"$id"\'"' in example
    assert not re.search(r'"messageId":"[A-Za-z0-9-]+"', example)
    assert "id=$(python3 -c 'import uuid; print(uuid.uuid4())')" in readme


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_python_names_import(doc: Path) -> None:
    text = doc.read_text()
    names = {
        f"{module}.{name}"
        for module, names in re.findall(r"^\s*from (accord[\w.]*) import ([\w, ]+)", text, re.M)
        for name in names.replace(" ", "").split(",")
    }
    names |= {m for m in re.findall(r"`(accord(?:\.\w+)+)", text) if m.split(".")[1] in PACKAGES}
    assert [name for name in sorted(names) if not _resolves(name)] == []


def test_executor_examples_leave_make_runs_port_free() -> None:
    text = (ROOT / "docs" / "executor.md").read_text()
    code = "\n".join(re.findall(r"```\w*\n(.*?)```", text, re.S))
    serve_lines = [line for line in _command_lines(code) if line.startswith("serve")]
    assert serve_lines and all("--port" in line for line in serve_lines)
    assert "9999" not in code  # `make run` serves there


@pytest.mark.processes
def test_serve_finds_an_agent_module_in_the_working_directory(tmp_path: Path) -> None:
    # docs/server.md: `accord serve --agent mymodule:agent` serves ./mymodule.py
    (tmp_path / "mymodule.py").write_text(
        "async def agent(ctx, task):\n"
        "    await task.start_working()\n"
        "    await task.update_artifact(text=ctx.text.upper(), last_chunk=True)\n"
        "    await task.complete()\n"
    )
    with accord_serve(tmp_path, "mymodule:agent", cwd=tmp_path) as server:
        message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        answer = httpx.post(
            f"{server.url}/message:send",
            json={"message": message},
            headers={"A2A-Version": "1.0"},
            timeout=10,
        )
    [artifact] = answer.json()["task"]["artifacts"]
    assert artifact["parts"] == [{"text": "HI"}]
