"""``accord stream`` prints the harness's step events (docs/harness.md, "Visible work") as
one line each — a tool call with its arguments, result and time, a model call with the tools
it asked for and its tokens — and no status line for them."""

from __future__ import annotations

import io

from rich.console import Console

from accord.cli._render import StreamPrinter
from accord.harness import STEP_MEDIA_TYPE
from accord.wire import (
    Message,
    Part,
    Role,
    StreamResponse,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)


def step(data: dict[str, object]) -> StreamResponse:
    message = Message(
        message_id="m", role=Role.AGENT, parts=[Part(data=data, media_type=STEP_MEDIA_TYPE)]
    )
    status = TaskStatus(state=TaskState.WORKING, message=message)
    update = TaskStatusUpdateEvent(task_id="t", context_id="c", status=status)
    return StreamResponse(status_update=update)


def test_step_events_print_as_lines() -> None:
    buffer = io.StringIO()
    printer = StreamPrinter(Console(file=buffer, width=200, color_system=None))
    printer.show(
        step(
            {
                "kind": "model_call",
                "model": "openai:gpt-4.1-mini",
                "tool_calls": [{"id": "1", "name": "lookup_order"}],
                "usage": {"input_tokens": 120, "output_tokens": 9, "cached_tokens": 0},
            }
        )
    )
    printer.show(
        step(
            {
                "kind": "tool_call",
                "name": "lookup_order",
                "arguments": {"order_id": 7},
                "result": "order 7:\nshipped",
                "error": False,
                "duration_ms": 12.4,
            }
        )
    )
    refused = {"kind": "tool_call", "name": "refund", "arguments": None}
    printer.show(step({**refused, "result": "hook.abort: no", "error": True}))
    lines = buffer.getvalue().splitlines()
    assert lines == [
        "  ⚙ model openai:gpt-4.1-mini calls lookup_order [120 in / 9 out tokens]",
        '  ⚙ lookup_order {"order_id": 7} → order 7: shipped (12 ms)',
        "  ⚙ refund null ✗ hook.abort: no",
    ]


def test_accord_chat_folds_a_step_event_into_its_turns_work_not_json() -> None:
    from accord.chat._conversation import Conversation

    shown = Conversation(me="alice").see(
        step(
            {
                "kind": "tool_call",
                "turn": "m0",
                "name": "lookup_order",
                "arguments": {"order_id": 7},
                "result": "shipped",
                "error": False,
                "duration_ms": 3,
            }
        )
    )
    [line] = shown
    assert line.kind == "work" and line.text == "▸ 1 tool call"
    assert line.work is not None
    assert line.work.details() == '  ⚙ lookup_order {"order_id":7} → shipped · 3 ms'
