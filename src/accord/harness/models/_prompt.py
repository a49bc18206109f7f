"""A conversation as an OpenAI-compatible model reads it: the messages of Chat Completions,
or the input items of the Responses API, and the tools in each API's shape.

Pure: the conversation in, JSON-ready data out. What comes from outside the conversation's
participants — a tool's result — is wrapped in an untrusted block, so that the model can tell
data from instructions; participants' messages name their sender (several people may talk in
one conversation).
"""

from __future__ import annotations

import json
from typing import Any

from accord.harness._transcript import Conversation, Entry, ModelStep, ToolResult, ToolSpec
from accord.harness._untrusted import untrusted


def _user_text(entry: Entry) -> str:
    return f"[{entry.sender}] {entry.text}"


def _result_text(result: ToolResult) -> str:
    body = untrusted(f"tool:{result.name}", result.content)
    return f"error: {body}" if result.error else body


def system_text(conversation: Conversation) -> str:
    """The instructions: the operator's system prompt, then what the task is and who is in it."""
    extension = conversation.extension
    people = ", ".join(f"{p.id} ({p.role.value}, {p.kind})" for p in extension.participants)
    lines = [
        conversation.system_prompt.strip(),
        f"You are {conversation.agent_id}, in task {conversation.task_id!r}: {extension.name}.",
        f"Goal: {extension.goal}",
        f"Participants: {people}.",
    ]
    if extension.description:
        lines.append(f"Description: {extension.description}")
    for criterion in extension.acceptance_criteria:
        lines.append(f"Acceptance criterion: {criterion.text}{' (met)' if criterion.met else ''}")
    return "\n".join(line for line in lines if line)


# --- Chat Completions ----------------------------------------------------------------------


def chat_messages(conversation: Conversation) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_text(conversation)}]
    for entry in conversation.entries:
        if entry.role == "user":
            messages.append({"role": "user", "content": _user_text(entry)})
        else:
            messages.append({"role": "assistant", "content": entry.text})
    for step in conversation.steps:
        if isinstance(step, ModelStep):
            message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
            if step.calls:
                message["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in step.calls
                ]
            messages.append(message)
        else:
            messages.append(
                {"role": "tool", "tool_call_id": step.call_id, "content": _result_text(step)}
            )
    return messages


def chat_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        for tool in tools
    ]


# --- Responses -----------------------------------------------------------------------------


def responses_input(conversation: Conversation) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for entry in conversation.entries:
        role = "user" if entry.role == "user" else "assistant"
        text = _user_text(entry) if entry.role == "user" else entry.text
        items.append({"role": role, "content": text})
    for step in conversation.steps:
        if isinstance(step, ModelStep):
            if step.text:
                items.append({"role": "assistant", "content": step.text})
            for call in step.calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": json.dumps(call.arguments),
                    }
                )
        else:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": step.call_id,
                    "output": _result_text(step),
                }
            )
    return items


def responses_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }
        for tool in tools
    ]
