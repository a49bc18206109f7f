"""``Conversation.asking``: the view one model step asks, built directly instead of by
``dataclasses.replace``; it must be that replace, field for field."""

from __future__ import annotations

import dataclasses

from accord.harness._transcript import (
    Conversation,
    Entry,
    ModelStep,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from accord.harness._wire import TaskExtension
from accord.wire._model import Task, TaskState, TaskStatus


def view() -> Conversation:
    """A view with every field away from its default."""
    return Conversation(
        task=Task(id="t", context_id="c", status=TaskStatus(state=TaskState.WORKING)),
        extension=TaskExtension(name="n", goal="g"),
        agent_id="harness",
        entries=(Entry("alice", "user", "hello", 0),),
        model_calls=4,
        model="scripted:x",
        reasoning_effort="high",
        system_prompt="be brief",
        tools=(ToolSpec("old"),),
        steps=(ModelStep("before"),),
    )


def test_asking_is_replace_of_steps_tools_and_model_calls() -> None:
    steps = (ModelStep("t", (ToolCall("lookup", {"q": 1}, "c1"),)), ToolResult("c1", "lookup", "r"))
    tools = (ToolSpec("lookup", "finds", {"type": "object"}),)
    asked = view().asking(steps, tools, 6)
    assert asked == dataclasses.replace(view(), steps=steps, tools=tools, model_calls=6)


def test_asking_names_every_field() -> None:
    """A field added to Conversation must be carried by asking too (this list with it)."""
    assert [field.name for field in dataclasses.fields(Conversation)] == [
        "task",
        "extension",
        "agent_id",
        "entries",
        "model_calls",
        "model",
        "reasoning_effort",
        "system_prompt",
        "tools",
        "steps",
    ]
