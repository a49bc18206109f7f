"""The other side: an agent participant answering what a harness delivered to it.

A harness delivers a channel message as a SendMessage whose channel part says who sent it
and on which channel, and whose metadata names the harness's task to answer on
(``accord.harness/task``). The agent answers by SendMessage on that task, to that harness,
authenticated as itself::

    from accord.client import ApiKey, Client
    from accord.harness.channels._peer import channel_message, reply

    async def agent(ctx, task):
        asked = channel_message(ctx.message)
        if asked is not None and asked.kind == "help_request":
            async with Client.connect(HARNESS_URL, credentials=ApiKey(MY_KEY)) as harness:
                await harness.send(reply(ctx.message, sender="helper", text="Venue A"),
                                   return_immediately=True)
"""

from __future__ import annotations

import uuid

from accord.harness.channels import _data as channel_data
from accord.harness.channels._data import ChannelData
from accord.harness.channels._outbox import TASK_REF_KEY
from accord.wire import Message, Role


def channel_message(message: Message) -> ChannelData | None:
    """The channel part of a message a harness delivered (None: it carries none, or a
    malformed one)."""
    return channel_data.of(message)


def reply(delivered: Message, *, sender: str, text: str) -> Message:
    """The message answering ``delivered`` (a help request, most often): a ``help_reply``
    on its channel, ``in_reply_to`` its id, from ``sender`` (the answering agent's
    participant id there), bound to the harness's task. ValueError when ``delivered`` is no
    channel message a harness delivered."""
    data = channel_data.of(delivered)
    metadata = delivered.metadata if isinstance(delivered.metadata, dict) else {}
    task_id = metadata.get(TASK_REF_KEY)
    if data is None or not isinstance(task_id, str):
        raise ValueError("not a channel message delivered by a harness")
    answer = ChannelData(
        channel_id=data.channel_id,
        sender=sender,
        kind="help_reply",
        text=text,
        in_reply_to=delivered.message_id,
    )
    return Message(
        message_id=uuid.uuid4().hex,
        role=Role.USER,
        parts=[answer.as_part()],
        task_id=task_id,
    )
