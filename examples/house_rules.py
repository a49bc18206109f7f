"""The Python half of the example plugin ``examples/harness/plugins/house-rules``: the
executors its hooks.json names by import path.

- ``no_shouting`` (``message.received.pre``, priority 50): a message written in capitals is
  refused before the model sees it ("message not accepted: please do not shout");
- ``shout`` (``command.invoked.in``, the body of ``/shout <text>``, declared in
  commands.json with its argument): answers the text in capitals.

Serve it with ``accord serve --agent harness --config examples/harness/plugins.toml`` from
the repository root (docs/harness.md, "Plugins").
"""

from __future__ import annotations

import msgspec

from accord.harness.hooks import CommandInvoked, CommandResult, HookAbort, MessageReceived


def no_shouting(point: str, context: MessageReceived) -> None:
    text = " ".join(part.get("text", "") for part in context.message.get("parts", []))
    letters = [c for c in text if c.isalpha()]
    if len(letters) >= 4 and all(c.isupper() for c in letters):
        raise HookAbort("please do not shout", "policy")


def shout(point: str, context: CommandInvoked) -> CommandInvoked:
    reply = str(context.args["text"]).upper() + "!"
    return msgspec.structs.replace(context, result=CommandResult(reply=reply))
