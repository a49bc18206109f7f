"""An agent participant served by its own ``accord serve`` (the process tests): it writes
every message it gets to ``$PEER_LOG`` (one JSON line: its id, who sent it, its channel
part), and answers each help request on the harness that asked (``$PEER_HARNESS_URL``),
authenticated there with ``$PEER_KEY``, as participant ``$PEER_ID``: "Venue A"."""

from __future__ import annotations

import json
import os

from accord.agents._api import RequestContext, TaskHandle
from accord.client import ApiKey, Client
from accord.harness.channels._peer import channel_message, reply


async def agent(ctx: RequestContext, task: TaskHandle) -> None:
    got = channel_message(ctx.message)
    line = {
        "id": ctx.message.message_id,
        "caller": ctx.caller.identity,
        "channel": got.as_json() if got is not None else None,
    }
    with open(os.environ["PEER_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")
    if got is not None and got.kind == "help_request":
        credentials = ApiKey(os.environ["PEER_KEY"])
        async with Client.connect(os.environ["PEER_HARNESS_URL"], credentials=credentials) as to:
            answer = reply(ctx.message, sender=os.environ["PEER_ID"], text="Venue A")
            await to.send(answer, return_immediately=True)
    await task.complete("noted")
