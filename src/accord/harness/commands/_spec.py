"""What a command is: its name, its line on the card, the arguments it declares and whether
it changes the task; and checking the arguments a message gives it.

Arguments are the words after the name, separated by white space, in the order declared. A
``rest`` argument (the last) takes the remaining text as it was written (a description with
spaces and line breaks). A command that declares no arguments (``arguments=None``) gets the
text after its name unchecked, as tiny-harness plugins expect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from accord.errors import AccordError

NAME_PATTERN = re.compile(r"[a-z][a-z0-9-]*")
ArgumentType = Literal["string", "integer", "number", "boolean"]
ARGUMENT_TYPES: tuple[str, ...] = ("string", "integer", "number", "boolean")
# Whether running a command changes the task: never (it reads), only when given an argument
# (/model with a name), or always. The built-in role policy lets watchers run what reads.
Changes = Literal["never", "with-arguments", "always"]
CHANGES: tuple[str, ...] = ("never", "with-arguments", "always")

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
_WORD = re.compile(r"\S+")


class ArgumentError(AccordError, ValueError):
    """A command's arguments do not fit its declaration: which, and why (the value itself is
    not repeated)."""


@dataclass(frozen=True, slots=True)
class Argument:
    name: str
    type: ArgumentType = "string"
    choices: tuple[str, ...] = ()
    required: bool = False
    rest: bool = False  # the remaining text, as written (the last argument only)
    description: str = ""

    def hint(self) -> str:
        shown = "|".join(self.choices) if self.choices else f"<{self.name}>"
        return shown if self.required else f"[{shown}]"


@dataclass(frozen=True, slots=True)
class CommandSpec:
    name: str
    description: str
    argument_hint: str = ""  # what follows the name on the card; from the arguments if ""
    arguments: tuple[Argument, ...] | None = None  # None: the text after the name, unchecked
    changes: Changes = "always"

    def __post_init__(self) -> None:
        if NAME_PATTERN.fullmatch(self.name) is None:
            raise ValueError(f"command name {self.name!r}: expected [a-z][a-z0-9-]*")
        if self.changes not in CHANGES:
            raise ValueError(f"command /{self.name}: changes is one of {', '.join(CHANGES)}")
        for index, argument in enumerate(self.arguments or ()):
            if argument.type not in ARGUMENT_TYPES:
                raise ValueError(
                    f"command /{self.name}: argument {argument.name!r}: type is one of "
                    + ", ".join(ARGUMENT_TYPES)
                )
            if argument.rest and index != len(self.arguments or ()) - 1:
                raise ValueError(f"command /{self.name}: only the last argument takes the rest")

    @property
    def hint(self) -> str:
        if self.argument_hint or not self.arguments:
            return self.argument_hint
        return " ".join(argument.hint() for argument in self.arguments)

    @property
    def usage(self) -> str:
        return f"/{self.name} {self.hint}".rstrip()

    def card_entry(self) -> dict[str, str]:
        """The command on the agent card (the commands extension's params)."""
        return {"name": self.name, "description": self.description, "argument_hint": self.hint}

    def changes_with(self, arguments: str) -> bool:
        """Whether running it with ``arguments`` changes the task."""
        if self.changes == "with-arguments":
            return arguments.strip() != ""
        return self.changes == "always"


def check_arguments(spec: CommandSpec, text: str) -> dict[str, Any]:
    """The declared arguments ``text`` gives, by name (absent optional ones left out);
    ArgumentError naming the one at fault."""
    declared = spec.arguments
    if declared is None:
        return {}
    values: dict[str, Any] = {}
    words = list(_WORD.finditer(text))
    for index, argument in enumerate(declared):
        if index >= len(words):
            if argument.required:
                raise ArgumentError(
                    f"/{spec.name}: {argument.name} is missing (usage: {spec.usage})"
                )
            continue
        if argument.rest:
            raw = text[words[index].start() :].strip()
            values[argument.name] = _converted(spec, argument, raw)
            return values
        values[argument.name] = _converted(spec, argument, words[index].group())
    if len(words) > len(declared):
        count = len(declared)
        takes = "no arguments" if count == 0 else f"at most {count} argument{'s' * (count > 1)}"
        raise ArgumentError(f"/{spec.name} takes {takes} (usage: {spec.usage})")
    return values


def _converted(spec: CommandSpec, argument: Argument, word: str) -> Any:
    where = f"/{spec.name}: {argument.name}"
    if argument.choices and word not in argument.choices:
        raise ArgumentError(f"{where} must be one of {', '.join(argument.choices)}")
    if argument.type == "integer":
        try:
            return int(word)
        except ValueError:
            raise ArgumentError(f"{where} must be an integer") from None
    if argument.type == "number":
        try:
            return float(word)
        except ValueError:
            raise ArgumentError(f"{where} must be a number") from None
    if argument.type == "boolean":
        if word.lower() in _TRUE or word.lower() in _FALSE:
            return word.lower() in _TRUE
        raise ArgumentError(f"{where} must be true or false")
    return word
