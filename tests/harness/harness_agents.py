"""A conversation agent for process tests: ``think <seconds>`` makes its turn take that long
(a turn worth cutting); anything else is answered at once."""

from __future__ import annotations

import asyncio

from accord.harness import Conversation, conversation_agent


async def turn(conversation: Conversation) -> str:
    word, _, seconds = conversation.text.partition(" ")
    if word == "think":
        await asyncio.sleep(float(seconds or 60))
    return f"answer to {conversation.text}"


agent = conversation_agent(turn)
