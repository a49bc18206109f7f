"""The Python half of the example plugin ``examples/harness/plugins/house-rules``: the
executors its hooks.json names by import path.

- ``no_card_numbers`` (``message.received.pre``, priority 40): data-loss prevention: a
  message carrying something shaped like a payment card number is refused before anything
  of it is stored ("message not accepted: no card numbers, please"): the sender gets that
  error, and the number is nowhere — not in the task's history, its streams, its push
  notifications or the dashboard;
- ``no_shouting`` (``message.received.pre``, priority 50): a message written in capitals is
  refused the same way ("message not accepted: please do not shout");
- ``shout`` (``command.invoked.in``, the body of ``/shout <text>``, declared in
  commands.json with its argument): answers the text in capitals.

Serve it with ``accord serve --agent harness --config examples/harness/plugins.toml`` from
the repository root (docs/harness.md, "Plugins").
"""

from __future__ import annotations

import re

import msgspec

from accord.harness.hooks import CommandInvoked, CommandResult, HookAbort, MessageReceived

# 13 to 19 digits, in groups separated by spaces or dashes, as card numbers are written
_CARD_NUMBER = re.compile(r"(?<!\d)\d(?:[ -]?\d){12,18}(?!\d)")


def no_card_numbers(point: str, context: MessageReceived) -> None:
    for part in context.message.get("parts", []):
        if _CARD_NUMBER.search(str(part.get("text", "")) + " " + str(part.get("data", ""))):
            raise HookAbort("no card numbers, please", "policy")


def no_shouting(point: str, context: MessageReceived) -> None:
    text = " ".join(part.get("text", "") for part in context.message.get("parts", []))
    letters = [c for c in text if c.isalpha()]
    if len(letters) >= 4 and all(c.isupper() for c in letters):
        raise HookAbort("please do not shout", "policy")


def shout(point: str, context: CommandInvoked) -> CommandInvoked:
    reply = str(context.args["text"]).upper() + "!"
    return msgspec.structs.replace(context, result=CommandResult(reply=reply))
