"""Bounds on untrusted input beyond what the schema already limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accord.wire import UNSET, Artifact, Message, invalid_params


@dataclass(frozen=True, slots=True)
class Bounds:
    max_body_bytes: int = 10 * 1024 * 1024
    max_parts: int = 256
    max_depth: int = 32  # nesting of free-form JSON (metadata, data parts)
    max_history_length: int = 10_000

    def check_message(self, message: Message, path: str = "message") -> None:
        self._check_content(message, path)

    def check_artifact(self, artifact: Artifact, path: str = "artifact") -> None:
        self._check_content(artifact, path)

    def _check_content(self, content: Message | Artifact, path: str) -> None:
        if len(content.parts) > self.max_parts:
            raise invalid_params(f"{path}.parts", f"at most {self.max_parts} parts are accepted")
        if content.metadata is not UNSET:
            self.check_depth(content.metadata, f"{path}.metadata")
        for index, part in enumerate(content.parts):
            if part.data is not UNSET:
                self.check_depth(part.data, f"{path}.parts[{index}].data")
            if part.metadata is not UNSET:
                self.check_depth(part.metadata, f"{path}.parts[{index}].metadata")

    def check_depth(self, value: Any, path: str) -> None:
        if _depth(value, self.max_depth + 1) > self.max_depth:
            raise invalid_params(path, f"nested deeper than {self.max_depth} levels")


def _depth(value: Any, cap: int) -> int:
    """Nesting depth of a JSON value, counting stops at ``cap``."""
    if cap <= 0 or not isinstance(value, dict | list):
        return 0
    children = value.values() if isinstance(value, dict) else value
    deepest = 0
    for child in children:
        if isinstance(child, dict | list):
            deepest = max(deepest, _depth(child, cap - 1))
            if deepest >= cap - 1:
                break
    return 1 + deepest
