"""A turn's visible work as the chat shows it: the harness's step events of one turn (its
model calls and tool calls, docs/harness.md "Visible work") and the tokens its model calls
took, folded into one summary line and the details it expands to. No terminal here: the app
(accord.chat._app) draws it, collapsed until asked.

A turn's tokens are counted once per model call, by the call's id (``<turn>#<step>``): a
``model_call`` event names its call's tokens, and the message that ends the turn's stretch
(its answer, a help request) names every call the stretch made, the one that answered
without a tool call too (``accord.harness/usage``). What the server sends is untrusted:
every field is checked, and what is shown is bounded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from accord.harness import call_id
from accord.harness.models import Usage

ARGUMENTS_SHOWN = 200  # characters of a tool call's arguments (compact JSON) shown
RESULT_SHOWN = 300  # characters of a tool call's result (or error) shown
NAME_SHOWN = 80  # characters of a tool's or model's name shown
MAX_STEPS = 500  # step events a turn keeps for its details (the summary counts them all)


def bounded(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis says it was cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def count(n: int, what: str) -> str:
    return f"{n:,} {what}" if n == 1 else f"{n:,} {what}s"


def tokens(used: Usage) -> str:
    cached = f" ({used.cached_tokens:,} cached)" if used.cached_tokens else ""
    return f"{used.input_tokens:,} tokens in / {used.output_tokens:,} out{cached}"


def usage_of(data: Any) -> Usage | None:
    """A step event's ``usage`` (None: the model did not say, or it is not one)."""
    if not isinstance(data, dict):
        return None
    found = [data.get(key, 0) for key in ("input_tokens", "output_tokens", "cached_tokens")]
    if not all(type(n) is int and n >= 0 for n in found):
        return None
    return Usage(*found)


def _int(value: Any) -> int:
    return value if type(value) is int else -1


def _text(value: Any, limit: int) -> str:
    return bounded(value, limit) if isinstance(value, str) else "?"


@dataclass
class Work:
    """One turn's work (``turn``: its key, the id of the message that started it)."""

    turn: str
    steps: list[dict[str, Any]] = field(default_factory=list)  # step events, as they came
    calls: dict[str, Usage] = field(default_factory=dict)  # each model call's tokens, by id
    tool_calls: int = 0
    failed: int = 0
    replayed: bool = False

    def see_step(self, data: dict[str, Any]) -> None:
        """One step event of this turn."""
        if data.get("replayed") is True:
            self.replayed = True
        if data.get("kind") == "tool_call":
            self.tool_calls += 1
            self.failed += data.get("error") is True
        elif data.get("kind") == "model_call":
            used = usage_of(data.get("usage"))
            step = _int(data.get("step"))
            if used is not None and step >= 0:
                self.calls[call_id(self.turn, step)] = used
        if len(self.steps) < MAX_STEPS:
            self.steps.append(data)

    def see_usage(self, calls: dict[str, Usage]) -> bool:
        """The model calls of this turn a message's usage names; whether any was new."""
        mine = {
            name: used
            for name, used in calls.items()
            if name.rpartition("#")[0] == self.turn and self.calls.get(name) != used
        }
        self.calls.update(mine)
        return bool(mine)

    @property
    def used(self) -> Usage:
        return sum(self.calls.values(), Usage())

    def summary(self, expanded: bool = False) -> str:
        """The collapsed line: ``▸ 2 tool calls · 1,234 tokens in / 56 out``."""
        said = [count(self.tool_calls, "tool call") if self.tool_calls else "no tool calls"]
        if self.failed:
            said[0] += f" ({self.failed:,} failed)"
        if self.calls:
            said.append(tokens(self.used))
        if self.replayed:
            said.append("resumed")
        return f"{'▾' if expanded else '▸'} {' · '.join(said)}"

    def details(self) -> str:
        """What the line expands to: each model call (its tokens, the tools it asked for)
        and each tool call (its arguments, its result or error, how long it took), in the
        order they came; then the calls that answered without a tool call."""
        shown: list[str] = []
        listed: set[str] = set()
        for data in self.steps:
            if data.get("kind") == "tool_call":
                shown.append(tool_line(data))
            elif data.get("kind") == "model_call":
                step = _int(data.get("step"))
                listed.add(call_id(self.turn, step))
                shown.append(model_line(data, self.calls.get(call_id(self.turn, step))))
        for name, used in self.calls.items():
            if name not in listed:
                what = "summary" if name.endswith("/summary") else "answer"
                shown.append(f"model call → {what} · {tokens(used)}")
        if len(self.steps) == MAX_STEPS:
            shown.append(f"(the first {MAX_STEPS:,} steps are shown)")
        return "\n".join(shown)


def model_line(data: dict[str, Any], used: Usage | None) -> str:
    asked = data.get("tool_calls")
    names = [
        _text(call.get("name"), NAME_SHOWN)
        for call in (asked if isinstance(asked, list) else [])
        if isinstance(call, dict)
    ]
    model = data.get("model")
    name = f" {_text(model, NAME_SHOWN)}" if isinstance(model, str) and model else ""
    took = tokens(used) if used is not None else "tokens not said"
    replayed = " · replayed" if data.get("replayed") is True else ""
    return f"model call{name} → {', '.join(names) or 'tools'} · {took}{replayed}"


def tool_line(data: dict[str, Any]) -> str:
    arguments = data.get("arguments")
    shown = (
        "(withheld)"
        if arguments is None
        else bounded(
            json.dumps(arguments, separators=(",", ":"), ensure_ascii=False), ARGUMENTS_SHOWN
        )
    )
    result = _text(data.get("result", ""), RESULT_SHOWN)
    if data.get("truncated") is True and not result.endswith("…"):
        result += "…"
    mark = "✗ error:" if data.get("error") is True else "→"
    took = data.get("duration_ms")
    timing = f" · {took:,.0f} ms" if isinstance(took, int | float) and took >= 0 else ""
    replayed = " · replayed" if data.get("replayed") is True else ""
    return f"  ⚙ {_text(data.get('name'), NAME_SHOWN)} {shown} {mark} {result}{timing}{replayed}"
