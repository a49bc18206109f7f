"""The ``[harness.openai]`` table: the OpenAI-compatible endpoint ``openai:NAME`` models use.

::

    [harness.openai]
    base_url = "https://api.openai.com/v1"   # any OpenAI-compatible server
    api = "chat"                             # or "responses"
    api_key_env = "OPENAI_API_KEY"           # the key is read from this variable only
    timeout_s = 120                          # per model call
    attempts = 3                             # while nothing of an answer has come

The key never comes from the file. A key would never be sent in clear to another machine: a
``base_url`` of plain ``http://`` to a host that is not loopback is refused at start-up when
the key's variable is set.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from accord import config as check
from accord.config import ConfigError

KNOWN = ("base_url", "api", "api_key_env", "timeout_s", "attempts")
APIS = ("chat", "responses")


@dataclass(frozen=True, slots=True)
class Endpoint:
    base_url: str = "https://api.openai.com/v1"
    api: Literal["chat", "responses"] = "chat"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    attempts: int = 3

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None


def parse(value: Any, where: str) -> Endpoint:
    """The endpoint of a ``[harness.openai]`` table; ConfigError naming the setting."""
    fields = check.table(value, where, KNOWN)
    endpoint = Endpoint()
    read: dict[str, Any] = {}
    if "base_url" in fields:
        read["base_url"] = check.url(fields["base_url"], f"{where}.base_url").rstrip("/")
    if "api" in fields:
        api = check.text(fields["api"], f"{where}.api")
        if api not in APIS:
            raise check.refuse(f"{where}.api", " or ".join(repr(a) for a in APIS), api)
        read["api"] = api
    if "api_key_env" in fields:
        read["api_key_env"] = check.text(fields["api_key_env"], f"{where}.api_key_env", empty=False)
    if "timeout_s" in fields:
        read["timeout_s"] = check.number(fields["timeout_s"], f"{where}.timeout_s")
        if read["timeout_s"] <= 0:
            raise ConfigError(f"{where}.timeout_s: must be more than 0")
    if "attempts" in fields:
        read["attempts"] = check.integer(fields["attempts"], f"{where}.attempts")
        if read["attempts"] < 1:
            raise ConfigError(f"{where}.attempts: at least 1")
    endpoint = dataclasses.replace(endpoint, **read)
    refuse_key_in_clear(endpoint, where)
    return endpoint


def refuse_key_in_clear(endpoint: Endpoint, where: str) -> None:
    """ConfigError when the key would go over plain HTTP to another machine."""
    parts = urlsplit(endpoint.base_url)
    if parts.scheme != "http" or endpoint.api_key() is None or is_loopback(parts.hostname or ""):
        return
    raise ConfigError(
        f"{where}.base_url: refusing to send the key in ${endpoint.api_key_env} over plain HTTP "
        f"to {parts.hostname}: use https://, or a loopback address"
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine (localhost, a loopback address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
