"""Keeping a turn's conversation within the model's context budget (``[harness]
context_tokens``): what comes before the cut (accord.harness.core._compaction) is summarised
by the model and replaced by the summary.

A summary of the task's messages is recorded in its metadata (``accord.harness/summary``:
``{"upto": n, "text": …}``), a task snapshot in its log, so later turns (after a restart, on
another node) start from it; a summary that reaches into the turn's own tool steps is this
turn's only. Off (0) by default: each summary is one more model call, whose tokens count in
the task's usage like the turn's others (``accord.harness._usage``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import partial
from typing import Any

from accord.agents import TaskHandle
from accord.core import Outcome, TaskRecord
from accord.core import agent as moves
from accord.harness._transcript import (
    SUMMARY_HEAD,
    SUMMARY_KEY,
    Conversation,
    Entry,
    ModelStep,
    Step,
    ToolResult,
)
from accord.harness.core._compaction import Item, cut, estimate_tokens
from accord.harness.models import Model, Usage

SUMMARY_TOKENS = 1_000  # room kept for the summary itself
ASK = (
    "Summarise the conversation below for yourself, to go on with it: who asked what, what "
    "was decided and done (tool calls and their results), and what is still open. Keep names, "
    "numbers and ids exactly.\n\n"
)


def _step_text(step: Step) -> str:
    if isinstance(step, ModelStep):
        calls = ", ".join(f"{c.name}({json.dumps(c.arguments)})" for c in step.calls)
        return f"{step.text} [called {calls}]" if calls else step.text
    return f"[{step.name} answered{' with an error' if step.error else ''}] {step.content}"


@dataclass(frozen=True, slots=True)
class Fitted:
    """A conversation within the budget, and the tokens its summary's model call took
    (None: no summary was made, or the model did not say)."""

    view: Conversation
    summary_usage: Usage | None = None


class Compactor:
    def __init__(self, budget_tokens: int) -> None:
        self.budget = budget_tokens

    async def fit(self, task: TaskHandle, view: Conversation, model: Model) -> Fitted:
        """``view``, with what does not fit the budget replaced by a summary (recorded)."""
        if self.budget <= 0:
            return Fitted(view)
        items = [Item(estimate_tokens(e.text)) for e in view.entries] + [
            Item(estimate_tokens(_step_text(s)), tool_result=isinstance(s, ToolResult))
            for s in view.steps
        ]
        reserve = estimate_tokens(view.system_prompt) + SUMMARY_TOKENS
        index = cut(items, self.budget, reserve)
        if index == 0:
            return Fitted(view)
        count = len(view.entries)
        old_entries = view.entries[: min(index, count)]
        old_steps = view.steps[: max(0, index - count)]
        text = "\n".join(
            [f"{e.sender} ({e.role}): {e.text}" for e in old_entries]
            + [_step_text(s) for s in old_steps]
        )
        asked = dataclasses.replace(
            view, entries=(Entry(view.agent_id, "user", ASK + text),), steps=(), tools=()
        )
        answered = await model.respond(asked)
        summary = answered.text
        positions = [e.position for e in old_entries if e.position >= 0]
        if positions:  # messages of the task: later turns start from the summary too
            await task.decide(
                partial(summarised, summary={"upto": max(positions) + 1, "text": summary})
            )
        head = Entry(view.agent_id, "agent", SUMMARY_HEAD + summary)
        kept_entries, kept_steps = view.entries[len(old_entries) :], view.steps[len(old_steps) :]
        fitted = dataclasses.replace(view, entries=(head, *kept_entries), steps=kept_steps)
        return Fitted(fitted, answered.usage)


def summarised(record: TaskRecord | None, now_ms: int, summary: dict[str, Any]) -> Outcome:
    """The task's metadata with ``summary``, as a task snapshot: the compaction's record."""
    metadata = record.task.metadata if record is not None else None
    base = dict(metadata) if isinstance(metadata, dict) else {}
    base[SUMMARY_KEY] = summary
    return moves.set_metadata(record, base, now_ms)
