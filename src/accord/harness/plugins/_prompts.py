"""Plugins' prompts: ``systemprompt.md`` (the system prompt) and ``prompts/*.md`` (named
prompts), in the plugin's namespace folder, as tiny-harness reads them.

- The system prompt: ``[harness] system_prompt`` (or ``system_prompt_file``) when set, else
  none; a plugin's ``systemprompt.md`` replaces it (each plugin's the one before, in loading
  order — operator plugins override the built-in, as in tiny-harness).
- A named prompt: its id (front matter ``id``, else the file's name without ``.md``) and its
  text. One whose front matter says ``extends: <section>`` extends that section of the system
  prompt: its text is added at the end of the section the ``## <section>`` heading opens
  (compared without case); the system prompt gains the section, at its end, when it has none
  (tiny-harness refuses that; its built-in prompt has the sections, accord's has none). A
  prompt of an id an earlier plugin gave is replaced. Named prompts that extend nothing are
  kept by id for code of your own (``agent.prompts.get(id)``); nothing reads them by itself,
  as in tiny-harness.

The front matter has ``id`` and ``extends`` (text) and nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from accord.harness._front_matter import FrontMatterError, read_markdown
from accord.harness.plugins._servers import ComponentError

MAX_PROMPT_BYTES = 256 * 1024
_HEADING = re.compile(r"^##[ \t]+(\S.*?)[ \t]*$", re.M)
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass(frozen=True, slots=True)
class Prompt:
    id: str
    text: str
    extends: str | None = None
    plugin: str = ""


def read_prompt(path: Path, plugin: str = "", *, system: bool = False) -> Prompt:
    """The prompt in ``path`` (ComponentError naming the file and what is wrong)."""
    try:
        front, body = read_markdown(path, MAX_PROMPT_BYTES)
    except FrontMatterError as exc:
        raise ComponentError(str(exc)) from None
    front = front or {}
    for key in front:
        if key not in ("id", "extends"):
            raise ComponentError(f"{path}: {key}: unknown field of a prompt (id, extends)")
    values: dict[str, str | None] = {}
    for key in ("id", "extends"):
        value = front.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ComponentError(f"{path}: {key}: text")
        values[key] = value.strip() if isinstance(value, str) else None
    prompt_id = values["id"] or path.stem
    if _ID.fullmatch(prompt_id) is None:
        raise ComponentError(f"{path}: id {prompt_id!r}: letters, digits, '.', '_' and '-'")
    if system and values["extends"] is not None:
        raise ComponentError(f"{path}: extends: the system prompt extends nothing")
    return Prompt(prompt_id, body.strip() + "\n", values["extends"], plugin)


class Prompts:
    """The system prompt and the named prompts, as plugins leave them."""

    def __init__(self, system_prompt: str = "") -> None:
        self.system_source = "harness.system_prompt" if system_prompt else ""
        self._system = system_prompt
        self._named: dict[str, Prompt] = {}
        self._rendered: str | None = None

    def set_system_prompt(self, text: str, source: str) -> str:
        """``text`` is the system prompt from now on (``source`` says whose); what it
        replaced says ``source`` of before ("" for none)."""
        replaced = self.system_source
        self._system, self.system_source = text, source
        self._rendered = None
        return replaced

    def add(self, prompt: Prompt) -> Prompt | None:
        """Keep ``prompt``; the prompt of its id it replaces, if any."""
        replaced = self._named.pop(prompt.id, None)
        self._named[prompt.id] = prompt
        self._rendered = None
        return replaced

    def get(self, prompt_id: str) -> Prompt | None:
        return self._named.get(prompt_id)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self._named)

    @property
    def system_prompt(self) -> str:
        """The system prompt, with the sections named prompts extend extended."""
        if self._rendered is None:
            self._rendered = extended(self._system, list(self._named.values()))
        return self._rendered


def extended(base: str, prompts: list[Prompt]) -> str:
    """``base`` with each prompt that ``extends`` a section added at that section's end (a
    section ``base`` lacks is added, after the others)."""
    extensions = [prompt for prompt in prompts if prompt.extends is not None]
    if not extensions:
        return base
    matches = list(_HEADING.finditer(base))
    preamble = (base[: matches[0].start()] if matches else base).strip()
    sections: list[tuple[str, list[str]]] = []  # (heading, bodies)
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(base)
        sections.append((match.group(1), [base[match.end() : end].strip()]))
    for prompt in extensions:
        assert prompt.extends is not None
        wanted = prompt.extends.strip().lower()
        for heading, bodies in sections:
            if heading.strip().lower() == wanted:
                bodies.append(prompt.text.strip())
                break
        else:
            sections.append((prompt.extends.strip(), [prompt.text.strip()]))
    parts = [preamble] if preamble else []
    for heading, bodies in sections:
        body = "\n\n".join(piece for piece in bodies if piece)
        parts.append(f"## {heading}\n\n{body}".rstrip())
    return "\n\n".join(parts) + "\n"
