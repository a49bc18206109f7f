"""``--agent``: find the agent a spec names, check at start-up that it is one, and read the
card description its module declares. Every failure is one line that says which spec, what
went wrong and what was expected, instead of a server that starts and then fails each
request."""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from accord.agents._description import CardDescription, parse_card
from accord.config import ConfigError
from accord.errors import AccordError

log = logging.getLogger("accord.server")

BUILTIN_AGENTS = {
    "echo": "accord.agents._echo:echo",
    "conformance": "accord.agents._conformance:ConformanceAgent",
}
DEFAULT_ATTRIBUTE = "agent"  # `--agent mymodule` serves mymodule:agent
CARD_ATTRIBUTE = "card"  # a module's own card description: a dict like the [card] table
EXPECTED = (
    "an agent is an `async def agent(ctx, task)` function, or an object (or a class) with "
    "an `async def execute(self, ctx, task)` method"
)


class AgentLoadError(AccordError, ValueError):
    """The agent spec names no agent; the message says why, in one line."""


@dataclass(frozen=True)
class LoadedAgent:
    agent: Any  # an async function or an object with async execute (and cancel)
    card: CardDescription = field(default_factory=CardDescription)  # from its module


def importable_from_working_directory() -> None:
    """Like `python -m`, find the user's own modules (an agent's, a plugin hook's) in the
    working directory."""
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


def load_agent(spec: str) -> LoadedAgent:
    """A built-in agent by name, or ``module:attribute`` (``module`` alone: ``module:agent``;
    ``attribute`` may be dotted). A class is instantiated with no arguments."""
    builtin = spec in BUILTIN_AGENTS
    target = BUILTIN_AGENTS.get(spec, spec)
    module_name, sep, attribute = target.partition(":")
    if not sep:
        attribute = DEFAULT_ATTRIBUTE
        spec = f"{module_name}:{attribute}"  # errors show what was looked for
    if not module_name or not attribute:
        raise AgentLoadError(
            f"agent {spec!r}: expected a built-in name ({', '.join(BUILTIN_AGENTS)}), "
            "module:attribute or a module with an attribute named 'agent'"
        )
    if not builtin:
        importable_from_working_directory()
    module = _import(spec, module_name)
    found: Any = module
    for name in attribute.split("."):
        if not hasattr(found, name):
            owner = f"module {module_name!r}" if found is module else repr(found)
            raise AgentLoadError(f"agent {spec!r}: {owner} has no attribute {name!r}")
        found = getattr(found, name)
    if inspect.isclass(found):
        try:
            found = found()
        except Exception as exc:
            raise AgentLoadError(
                f"agent {spec!r}: cannot create {found.__qualname__}() with no arguments: "
                f"{type(exc).__name__}: {exc}"
            ) from None
    return LoadedAgent(checked_agent(found, spec), _module_card(module))


def checked_agent(agent: Any, spec: str | None = None) -> Any:
    """``agent`` as the engine runs it, or :class:`AgentLoadError` saying what it is instead
    (``spec`` names it in errors; default: its qualified name). An object with ``execute``
    and no ``cancel`` is served by its ``execute``."""
    if spec is None:
        spec = str(getattr(agent, "__qualname__", None) or repr(agent))
    execute = getattr(agent, "execute", None)
    if execute is not None and not inspect.isroutine(agent):
        if not inspect.iscoroutinefunction(execute):
            raise AgentLoadError(f"agent {spec!r}: its execute is not `async def`; {EXPECTED}")
        cancel = getattr(agent, "cancel", None)
        if cancel is None:
            return execute
        if not inspect.iscoroutinefunction(cancel):
            raise AgentLoadError(f"agent {spec!r}: its cancel is not `async def`")
        return agent
    if inspect.iscoroutinefunction(agent) or (
        callable(agent)
        and not inspect.isroutine(agent)
        and inspect.iscoroutinefunction(getattr(agent, "__call__", None))  # noqa: B004
    ):
        return agent
    raise AgentLoadError(f"agent {spec!r} is {_kind(agent)}; {EXPECTED}")


def _import(spec: str, module_name: str) -> ModuleType:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (
            module_name == exc.name or module_name.startswith(exc.name + ".")
        ):
            raise AgentLoadError(
                f"agent {spec!r}: no module named {exc.name!r} (searched the working "
                "directory and the installed packages)"
            ) from None
        failure: Exception = exc
    except Exception as exc:  # the module's own code failed as it ran (or did not parse)
        failure = exc
    log.debug("importing %s failed", module_name, exc_info=failure)
    raise AgentLoadError(
        f"agent {spec!r}: importing module {module_name!r} failed: "
        f"{type(failure).__name__}: {failure}"
    ) from None


def _module_card(module: ModuleType) -> CardDescription:
    declared = getattr(module, CARD_ATTRIBUTE, None)
    if declared is None:
        return CardDescription()
    try:
        return parse_card(declared, f"module {module.__name__}")
    except ConfigError as exc:
        raise AgentLoadError(str(exc)) from None


def _kind(agent: Any) -> str:
    if inspect.ismodule(agent):
        return f"a module ({agent.__name__})"
    if inspect.isgeneratorfunction(agent) or inspect.isasyncgenfunction(agent):
        return "a generator function"
    if inspect.isroutine(agent):
        return f"a plain function ({getattr(agent, '__qualname__', agent)}, not `async def`)"
    return f"a {type(agent).__name__} object"
