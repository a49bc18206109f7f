"""The ``[media]`` table of accord's TOML settings (docs/media.md).

::

    [media]
    enabled = true                  # default: on for the harness, off for other agents
    max_file_bytes = 20971520       # 20 MiB a file (tiny-harness's limit)
    max_message_bytes = 26214400    # 25 MiB the files of one message together
    max_audio_seconds = 120         # advertised; enforced for WAV (its header says)
    accepted = ["image/*", "text/*", ...]   # media types a file part may have
    produced = []                   # media types the agent gives
    fetch_urls = true               # fetch a url part (through the SSRF guard) and keep it
    fetch_timeout_s = 20
    allow_hosts = []                # hosts / CIDR blocks the fetch may reach despite the guard
    model_text_chars = 20000        # of a text file, what a model reads

Every error names the file and the setting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from accord import config as check
from accord.config import ConfigError

MiB = 1024 * 1024

DEFAULT_ACCEPTED = (
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "text/*",
    "application/json",
    "application/pdf",
    "application/octet-stream",
    "audio/wav",
    "audio/mpeg",
    "audio/ogg",
    "audio/webm",
)

KNOWN = (
    "enabled",
    "max_file_bytes",
    "max_message_bytes",
    "max_audio_seconds",
    "accepted",
    "produced",
    "fetch_urls",
    "fetch_timeout_s",
    "allow_hosts",
    "model_text_chars",
)


@dataclass(frozen=True)
class MediaSettings:
    enabled: bool | None = None  # None: on for an agent that reads files (the harness)
    max_file_bytes: int = 20 * MiB
    max_message_bytes: int = 25 * MiB
    max_audio_seconds: float = 120.0
    accepted: tuple[str, ...] = DEFAULT_ACCEPTED
    produced: tuple[str, ...] = ()
    fetch_urls: bool = True
    fetch_timeout_s: float = 20.0
    allow_hosts: tuple[str, ...] = field(default=())
    model_text_chars: int = 20_000

    def on(self, *, reads_media: bool) -> bool:
        """Whether media is on: as ``enabled`` says, else for an agent that reads files
        (the harness)."""
        return self.enabled if self.enabled is not None else reads_media

    def accepts(self, media_type: str) -> bool:
        """Whether a file of ``media_type`` is taken (``type/*`` entries match a type)."""
        essence = media_type.partition(";")[0].strip().lower()
        major = essence.partition("/")[0]
        for pattern in self.accepted:
            pattern = pattern.partition(";")[0].strip().lower()
            if pattern == essence or pattern == f"{major}/*":
                return True
        return False


def parse_media(value: Any, source: str = "") -> MediaSettings:
    where = f"{source}: media" if source else "media"
    fields = check.table(value, where, KNOWN)
    values: dict[str, Any] = {}
    if "enabled" in fields:
        values["enabled"] = check.boolean(fields["enabled"], f"{where}.enabled")
    if "fetch_urls" in fields:
        values["fetch_urls"] = check.boolean(fields["fetch_urls"], f"{where}.fetch_urls")
    for name in ("max_file_bytes", "max_message_bytes", "model_text_chars"):
        if name in fields:
            values[name] = _positive(check.integer(fields[name], f"{where}.{name}"), where, name)
    for name in ("max_audio_seconds", "fetch_timeout_s"):
        if name in fields:
            values[name] = _positive(check.number(fields[name], f"{where}.{name}"), where, name)
    for name in ("accepted", "produced"):
        if name in fields:
            values[name] = tuple(check.media_types(fields[name], f"{where}.{name}"))
    if "allow_hosts" in fields:
        values["allow_hosts"] = tuple(check.texts(fields["allow_hosts"], f"{where}.allow_hosts"))
    return MediaSettings(**values)


def _positive(value: float, where: str, name: str) -> Any:
    if value <= 0:
        raise ConfigError(f"{where}.{name}: must be more than 0, got {value:g}")
    return value
