"""Visible work: each model call of a turn and each tool call it makes, as an event clients
see live and find in the task's history (docs/harness.md, "Visible work").

Each event is a status update in the task's current state (WORKING: a turn runs) whose
message holds one data part of media type :data:`STEP_MEDIA_TYPE` and nothing else: a
client that does not know the type shows nothing for it (no text part), a status message
joins the task's history (GetTask, a later subscription), and the model never reads it
(:func:`is_step`). Two kinds:

- ``model_call``: a model call answered with tool calls — its step, model, token usage,
  the tools it asked for (ids and names; their arguments come with each call's own event),
  and whether the answer was replayed from the journal (a turn resumed after a crash). A
  call that answers without one is no event: the answer it gives carries its tokens
  (accord.harness._usage), and a plain turn's stream is as it was;
- ``tool_call``: a tool call finished — its arguments and result as the ``tool.invoked``
  hooks left them (a hook that redacts replaces them before anyone sees them), whether it
  failed, how long it took, and whether its result was replayed from the journal.

An event's message id names its step (``<turn>#<step>:model``, ``<turn>#<step>:tool:<call>``):
a turn resumed after a crash does not send again what its cut run had sent.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from accord.core import AFTER_KEY
from accord.wire import UNSET, Message, Part, Role

if TYPE_CHECKING:
    from accord.agents import TaskHandle
    from accord.harness.models import ModelResponse, Usage

STEP_MEDIA_TYPE = "application/vnd.accord.step+json"
STEP_VERSION = 1
RESULT_PREVIEW = 4_000  # characters of a tool's result an event carries
STEP_PREVIEW = 120  # characters of a result a one-line summary shows
OFF_ENV = "ACCORD_HARNESS_STEP_EVENTS"  # "0": no step events (benchmarks compare with it)


def is_step(message: Message) -> bool:
    """Whether ``message`` is a step event (the model never reads one)."""
    return message.role is Role.AGENT and any(
        part.media_type == STEP_MEDIA_TYPE for part in message.parts
    )


def step_data(message: Message) -> dict[str, Any] | None:
    """A step event's data (None: ``message`` is none)."""
    for part in message.parts:
        if part.media_type == STEP_MEDIA_TYPE and isinstance(part.data, dict):
            return part.data
    return None


def usage_data(used: Usage | None) -> dict[str, int] | None:
    if used is None:
        return None
    return {
        "input_tokens": used.input_tokens,
        "output_tokens": used.output_tokens,
        "cached_tokens": used.cached_tokens,
    }


class StepEvents:
    """The step events of one stretch of a turn (``turn`` its key) on ``task``; ``sent``: the
    ids of the messages the task holds already (a resumed turn's)."""

    def __init__(
        self, task: TaskHandle, turn: str, sent: Collection[str] = (), after: int | None = None
    ) -> None:
        self.task = task
        # (placed in the history after the ``after`` messages its stretch saw and the steps
        # before it — before a message that joined while it ran, as its answer is)
        self.after = after
        self.turn = turn
        self.sent = sent
        self.on = os.environ.get(OFF_ENV) != "0"
        self.noted = 0  # (how many this stretch added to the task's history)

    async def model_call(
        self, step: int, model: str, response: ModelResponse, replayed: bool
    ) -> None:
        data = {
            "version": STEP_VERSION,
            "kind": "model_call",
            "turn": self.turn,
            "step": step,
            "model": model,
            "usage": usage_data(response.usage),
            "tool_calls": [{"id": call.id, "name": call.name} for call in response.tool_calls],
            "replayed": replayed,
        }
        await self._send(f"{self.turn}#{step}:model", data)

    async def tool_call(
        self,
        step: int,
        call_id: str,
        name: str,
        arguments: dict[str, Any] | None,
        result: str,
        error: bool,
        duration_ms: float | None,
        replayed: bool,
    ) -> None:
        """``arguments`` as the hooks left them (None: withheld — a hook refused the call,
        or the call was replayed from a journal that does not hold what hooks showed)."""
        data = {
            "version": STEP_VERSION,
            "kind": "tool_call",
            "turn": self.turn,
            "step": step,
            "id": call_id,
            "name": name,
            "arguments": arguments,
            "result": result[:RESULT_PREVIEW],
            "truncated": len(result) > RESULT_PREVIEW,
            "error": error,
            "duration_ms": None if duration_ms is None else round(duration_ms, 3),
            "replayed": replayed,
        }
        await self._send(f"{self.turn}#{step}:tool:{call_id}", data)

    async def _send(self, message_id: str, data: dict[str, Any]) -> None:
        if not self.on or message_id in self.sent:
            return
        message = Message(
            message_id=message_id,
            role=Role.AGENT,
            parts=[Part(data=data, media_type=STEP_MEDIA_TYPE)],
            metadata=UNSET if self.after is None else {AFTER_KEY: self.after + self.noted},
            task_id=self.task.task_id,
            context_id=self.task.context_id,
        )
        await self.task.note(message)
        self.noted += 1


def step_line(message: Any) -> str | None:
    """A step event as one line (None: ``message`` is none)."""
    if not isinstance(message, Message):
        return None
    for part in message.parts:
        data = part.data
        if part.media_type != STEP_MEDIA_TYPE or not isinstance(data, dict):
            continue
        if data.get("kind") == "tool_call":
            arguments = json.dumps(data.get("arguments"), ensure_ascii=False)
            result = " ".join(str(data.get("result", "")).split())
            if len(result) > STEP_PREVIEW:
                result = result[:STEP_PREVIEW] + "…"
            took = data.get("duration_ms")
            timing = f" ({took:.0f} ms)" if isinstance(took, int | float) else ""
            mark = "✗" if data.get("error") else "→"
            return f"{data.get('name', '?')} {arguments} {mark} {result}{timing}"
        calls = data.get("tool_calls")
        names = (
            ", ".join(str(c.get("name", "?")) for c in calls if isinstance(c, dict))
            if isinstance(calls, list)
            else ""
        )
        used = data.get("usage")
        tokens = (
            f" [{used.get('input_tokens', 0)} in / {used.get('output_tokens', 0)} out tokens]"
            if isinstance(used, dict)
            else ""
        )
        return f"model {data.get('model', '')} calls {names}{tokens}"
    return None
