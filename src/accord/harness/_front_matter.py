"""The YAML front matter of a markdown file (a skill's ``SKILL.md``, a plugin's prompt): a
first block between ``---`` lines, read with PyYAML's safe loader (no tags, no objects)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from accord.errors import AccordError, require

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


class FrontMatterError(AccordError, ValueError):
    """The front matter is not YAML, or not a mapping."""


def split_front_matter(text: str) -> tuple[dict[str, Any] | None, str]:
    """The front matter (None: the text has none) and the body after it."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return None, text
    require("harness", "reading skills and prompts (YAML front matter)")
    import yaml

    try:
        loaded = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        raise FrontMatterError(f"the front matter is not YAML{where}") from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise FrontMatterError("the front matter is not a mapping of fields")
    return {str(key): value for key, value in loaded.items()}, text[match.end() :]


def read_markdown(path: Path, max_bytes: int) -> tuple[dict[str, Any] | None, str]:
    """The front matter and the body of the markdown file at ``path`` (FrontMatterError
    naming the file: unreadable, larger than ``max_bytes``, not UTF-8, a bad front matter)."""
    try:
        with path.open("rb") as file:
            raw = file.read(max_bytes + 1)
    except OSError as exc:
        raise FrontMatterError(f"{path}: cannot read it ({exc.strerror})") from None
    if len(raw) > max_bytes:
        raise FrontMatterError(f"{path}: larger than {max_bytes} bytes")
    try:
        return split_front_matter(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise FrontMatterError(f"{path}: not UTF-8 text") from None
    except FrontMatterError as exc:
        raise FrontMatterError(f"{path}: {exc}") from None
