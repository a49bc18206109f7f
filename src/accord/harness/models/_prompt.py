"""A conversation as an OpenAI-compatible model reads it: the messages of Chat Completions,
or the input items of the Responses API, and the tools in each API's shape.

Pure: the conversation in, JSON-ready data out. What comes from outside the conversation's
participants — a tool's result — is wrapped in an untrusted block, so that the model can tell
data from instructions; participants' messages name their sender (several people may talk in
one conversation).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from accord.harness._transcript import (
    Conversation,
    Entry,
    Image,
    ModelStep,
    ToolResult,
    ToolSpec,
)
from accord.harness._untrusted import untrusted


def _user_text(entry: Entry) -> str:
    return f"[{entry.sender}] {entry.text}"


def data_url(image: Image) -> str:
    """An image as a ``data:`` URL (how OpenAI-compatible APIs take an inline image)."""
    return f"data:{image.media_type};base64,{base64.b64encode(image.data).decode('ascii')}"


def _chat_user(entry: Entry) -> str | list[dict[str, Any]]:
    """A participant's message for Chat Completions: its text, and its images as
    ``image_url`` parts (data URLs) after it."""
    if not entry.images:
        return _user_text(entry)
    return [
        {"type": "text", "text": _user_text(entry)},
        *({"type": "image_url", "image_url": {"url": data_url(image)}} for image in entry.images),
    ]


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
            messages.append({"role": "user", "content": _chat_user(entry)})
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
        if entry.images:  # (the Responses API's input parts: text, then the images)
            content: Any = [
                {"type": "input_text", "text": text},
                *({"type": "input_image", "image_url": data_url(i)} for i in entry.images),
            ]
            items.append({"role": role, "content": content})
            continue
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


# --- Anthropic Messages --------------------------------------------------------------------


def anthropic_messages(conversation: Conversation) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the messages of the Messages API.

    The same messages as Chat Completions', in the same order (one order for every
    provider), in Anthropic's shape: the system prompt apart; a tool call a ``tool_use`` block
    of the assistant's message; a tool's result a ``tool_result`` block of a user message.
    Text that is only whitespace is left out (the API refuses empty text blocks)."""
    errors = {s.call_id for s in conversation.steps if isinstance(s, ToolResult) and s.error}
    system: list[str] = []
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for message in chat_messages(conversation):
        role, content = message["role"], message.get("content")
        if role == "system":
            system.append(str(content))
            continue
        if role == "tool":
            call_id = message["tool_call_id"]
            result = {"type": "tool_result", "tool_use_id": call_id, "content": content}
            blocks = [{**result, "is_error": True} if call_id in errors else result]
        elif isinstance(content, list):  # a participant's text with images
            blocks = [_anthropic_block(item) for item in content]
        else:
            blocks = [_text(content)] if isinstance(content, str) and content.strip() else []
            blocks += [
                {
                    "type": "tool_use",
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "input": json.loads(call["function"]["arguments"]),
                }
                for call in message.get("tool_calls", ())
            ]
        turns.append(("assistant" if role == "assistant" else "user", blocks))
    return "\n".join(system), alternating(turns)


def alternating(turns: list[tuple[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """Messages whose roles alternate from a user message, as the Messages API wants them:
    consecutive turns of one role merged into one message (the results of parallel tool
    calls in one user message, before any text in it), turns without content left out, a
    user message first when the agent spoke first."""
    messages: list[dict[str, Any]] = []
    for role, blocks in turns:
        if not blocks:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": list(blocks)})
    if messages and messages[0]["role"] == "assistant":
        # (a conversation the agent began, or one whose start is a summary)
        messages.insert(0, {"role": "user", "content": [_text("[the conversation so far]")]})
    for message in messages:
        message["content"].sort(key=lambda block: block["type"] != "tool_result")
    return messages


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _anthropic_block(item: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions content part as a Messages API block: an ``image_url`` data URL
    as an ``image`` block with a base64 source."""
    if item.get("type") != "image_url":
        return _text(str(item.get("text", "")))
    head, _, data = item["image_url"]["url"].partition(",")
    media_type = head.removeprefix("data:").partition(";")[0]
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def anthropic_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [
        {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
        for tool in tools
    ]
