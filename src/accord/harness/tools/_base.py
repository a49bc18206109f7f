"""What a tool is to a turn, and the set of them a turn offers the model."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from accord.agents import TaskHandle
from accord.harness._transcript import ToolSpec
from accord.harness._wire import Role
from accord.harness.models._base import Usage

# What model providers accept as a tool name.
SAFE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_RESULT_CHARS = 20_000  # of a tool's answer a model sees (the rest is cut, and says so)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """A tool's answer: text for the model, and whether it is an error (a failed tool gives
    the model an error result, never a failed turn). ``ends_turn``: the tool ended the turn
    (``ask_participant`` parked the task awaiting an answer): the model is not asked again."""

    content: str
    error: bool = False
    ends_turn: bool = False

    def bounded(self) -> ToolOutcome:
        if len(self.content) <= MAX_RESULT_CHARS:
            return self
        cut = len(self.content) - MAX_RESULT_CHARS
        return ToolOutcome(
            f"{self.content[:MAX_RESULT_CHARS]}\n[… {cut} more characters cut]",
            self.error,
            self.ends_turn,
        )


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who the call is for: the task, and the participant whose message began the turn
    (with their role); ``task`` is the turn's handle, for the harness's own tools."""

    task_id: str
    sender: str = ""
    sender_role: Role | None = None
    task: TaskHandle | None = None
    correlation_id: str = ""  # the message the turn answers
    model_call: int = -1  # the number of the model call that asked for this call
    call_id: str = ""  # the call's id (the same when a turn runs again after a crash)
    # The tokens of the turn's model calls so far, by call id: a tool that ends the turn
    # (ask_participant) puts them on the message it parks the task with.
    used: Mapping[str, Usage] = field(default_factory=dict)


class Tool(Protocol):
    @property
    def spec(self) -> ToolSpec: ...

    @property
    def idempotent(self) -> bool:
        """Safe to run again after a crash left it unfinished (a read, say)."""
        ...

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome: ...


class ToolSet:
    """The tools of a turn, by name; names are unique and safe for every provider."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        name = tool.spec.name
        if not SAFE_NAME.fullmatch(name):
            raise ValueError(f"tool name {name!r}: 1-64 characters of A-Z a-z 0-9 _ -")
        if name in self._tools:
            raise ValueError(f"two tools are named {name!r}")
        self._tools[name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool.spec for tool in self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)


def safe_name(*pieces: str) -> str:
    """A provider-safe tool name from ``pieces`` (an MCP server's name and its tool's)."""
    joined = "_".join(re.sub(r"[^A-Za-z0-9_-]", "_", piece) for piece in pieces)
    return joined[:64] or "tool"
