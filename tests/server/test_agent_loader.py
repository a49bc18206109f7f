"""``--agent``: what is accepted as an agent, and the one line a refused spec gets."""

from __future__ import annotations

import importlib
import inspect
import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from accord.agents._conformance import ConformanceAgent
from accord.agents._echo import echo
from accord.agents._loader import AgentLoadError, load_agent
from accord.app._build import build_app
from accord.app._settings import Settings

_names = itertools.count()
WriteModule = Callable[..., str]


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WriteModule:
    """``module(source)`` writes a uniquely named module that can be imported; returns its
    name."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(source: str, name: str | None = None) -> str:
        name = name or f"agent_module_{next(_names)}"
        path = tmp_path.joinpath(*name.split("."))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_suffix(".py").write_text(source)
        importlib.invalidate_caches()
        return name

    return write


def refusal(spec: str) -> str:
    with pytest.raises(AgentLoadError) as refused:
        load_agent(spec)
    return str(refused.value)


def test_the_built_in_agents_load() -> None:
    assert load_agent("echo").agent is echo
    assert isinstance(load_agent("conformance").agent, ConformanceAgent)


def test_an_object_with_async_execute_and_cancel_is_served_as_it_is(module: WriteModule) -> None:
    name = module(
        "class Agent:\n"
        "    async def execute(self, ctx, task): ...\n"
        "    async def cancel(self, ctx, task): ...\n"
    )
    loaded = load_agent(f"{name}:Agent")  # a class is instantiated
    assert type(loaded.agent).__name__ == "Agent"


def test_an_object_with_only_async_execute_is_served_by_it(module: WriteModule) -> None:
    name = module("class Agent:\n    async def execute(self, ctx, task): ...\nagent = Agent()\n")
    loaded = load_agent(name)
    assert inspect.ismethod(loaded.agent) and loaded.agent.__name__ == "execute"


def test_an_object_with_an_async_call_is_an_agent(module: WriteModule) -> None:
    name = module("class Agent:\n    async def __call__(self, ctx, task): ...\nagent = Agent()\n")
    assert type(load_agent(name).agent).__name__ == "Agent"


def test_a_dotted_attribute_is_followed(module: WriteModule) -> None:
    name = module("class Holder:\n    @staticmethod\n    async def agent(ctx, task): ...\n")
    assert load_agent(f"{name}:Holder.agent").agent.__name__ == "agent"


def test_what_is_not_an_agent_is_refused_saying_what_is_expected(module: WriteModule) -> None:
    name = module(
        "def plain(ctx, task): ...\n"
        "async def gen(ctx, task):\n    yield 1\n"
        "class SyncExecute:\n    def execute(self, ctx, task): ...\n"
        "class SyncCancel:\n"
        "    async def execute(self, ctx, task): ...\n"
        "    def cancel(self, ctx, task): ...\n"
        "class NeedsArgs:\n"
        "    def __init__(self, key): ...\n"
        "    async def execute(self, ctx, task): ...\n"
        "number = 3\n"
    )
    expected = "an agent is an `async def agent(ctx, task)` function, or an object"
    assert refusal(f"{name}:plain").startswith(
        f"agent '{name}:plain' is a plain function (plain, not `async def`); {expected}"
    )
    assert refusal(f"{name}:gen").startswith(f"agent '{name}:gen' is a generator function; ")
    assert refusal(f"{name}:number").startswith(f"agent '{name}:number' is a int object; ")
    assert refusal(f"{name}:SyncExecute").startswith(
        f"agent '{name}:SyncExecute': its execute is not `async def`; "
    )
    assert refusal(f"{name}:SyncCancel") == (
        f"agent '{name}:SyncCancel': its cancel is not `async def`"
    )
    assert refusal(f"{name}:NeedsArgs") == (
        f"agent '{name}:NeedsArgs': cannot create NeedsArgs() with no arguments: TypeError: "
        "NeedsArgs.__init__() missing 1 required positional argument: 'key'"
    )


def test_a_module_alone_means_its_agent_attribute(module: WriteModule) -> None:
    name = module("async def agent(ctx, task): ...\n")
    assert load_agent(name).agent.__name__ == "agent"
    other = module("async def serve_me(ctx, task): ...\n")
    assert refusal(other) == f"agent '{other}:agent': module '{other}' has no attribute 'agent'"


def test_a_failure_inside_the_module_is_said_to_happen_importing_it(module: WriteModule) -> None:
    missing = module("import not_installed_anywhere\n")
    assert refusal(f"{missing}:agent") == (
        f"agent '{missing}:agent': importing module '{missing}' failed: "
        "ModuleNotFoundError: No module named 'not_installed_anywhere'"
    )
    raising = module("raise RuntimeError('no API key in the environment')\n")
    assert refusal(raising) == (
        f"agent '{raising}:agent': importing module '{raising}' failed: "
        "RuntimeError: no API key in the environment"
    )
    broken = module("async def agent(ctx, task)\n")
    assert refusal(broken).startswith(
        f"agent '{broken}:agent': importing module '{broken}' failed: SyntaxError: "
    )


def test_a_module_that_does_not_exist_is_named(module: WriteModule) -> None:
    assert refusal("no_such_module_here:agent") == (
        "agent 'no_such_module_here:agent': no module named 'no_such_module_here' (searched "
        "the working directory and the installed packages)"
    )
    package = module("", "agent_package_a.__init__").split(".")[0]
    assert refusal(f"{package}.nothing:agent").startswith(
        f"agent '{package}.nothing:agent': no module named '{package}.nothing' "
    )
    assert refusal(":agent").startswith("agent ':agent': expected a built-in name")


def test_an_agent_given_in_process_is_checked_too() -> None:
    def plain(ctx: object, task: object) -> None: ...

    with pytest.raises(AgentLoadError, match="is a plain function"):
        build_app(Settings(store="memory://"), plain)
