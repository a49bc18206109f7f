"""A conversation agent without a model: every turn is answered by a plain function.

    accord serve --agent examples.conversation:agent --store memory:// --port 9100

Each message continues the conversation (send it with the task's id); the task waits in
INPUT_REQUIRED (sub_state awaiting-next-message) between turns, and ends when a participant
sends the complete control (``accord complete URL TASK_ID --as alice``).
"""

from __future__ import annotations

from accord.harness import Conversation, conversation_agent


async def turn(conversation: Conversation) -> str:
    said = [entry.text for entry in conversation.entries if entry.role == "user"]
    return f"{conversation.sender}, message {len(said)} of this conversation: {conversation.text!r}"


agent = conversation_agent(turn, agent_id="counter")
