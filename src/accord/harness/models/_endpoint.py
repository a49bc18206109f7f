"""The ``[harness.openai]`` and ``[harness.anthropic]`` tables: the endpoints ``openai:NAME``
and ``anthropic:NAME`` models use.

::

    [harness.openai]
    base_url = "https://api.openai.com/v1"   # any OpenAI-compatible server
    api = "chat"                             # or "responses"
    api_key_env = "OPENAI_API_KEY"           # the key is read from this variable only
    timeout_s = 120                          # per model call
    attempts = 3                             # while nothing of an answer has come
    prompt_cache_key = true                  # false for a server that refuses it (Gemini's)
    client = "accord"                        # or "package": the call through openai's client

    [harness.anthropic]
    base_url = "https://api.anthropic.com"   # the server root, as the anthropic package takes it
    api_key_env = "ANTHROPIC_API_KEY"
    timeout_s = 120
    attempts = 3
    max_tokens = 8192                        # the most an answer may take (the API wants it)
    thinking = 0                             # extended thinking: 0 (off), a budget of
                                             # tokens (1024 up to max_tokens), or "adaptive"
    client = "accord"                        # or "package": the call through anthropic's

``client`` says what makes the HTTP call: ``"accord"`` (the default), accord's own HTTP/1.1
client (accord.harness.models._http: a kept-alive connection pool, TLS with the system's CAs,
an http:// proxy from ``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY`` and ``NO_PROXY``, a
fraction of the CPU per call and per token), or ``"package"``, the provider's package
(``openai``, ``anthropic``) as before. When the environment names a proxy accord's client
cannot use (not http://), the package's client is used, with a log line saying so. Either way
accord builds the request and reads the stream itself.

The key never comes from the file. A key would never be sent in clear to another machine: a
``base_url`` of plain ``http://`` to a host that is not loopback is refused at start-up when
the key's variable is set.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from accord import config as check
from accord.config import ConfigError

CONNECTION = ("base_url", "api_key_env", "timeout_s", "attempts", "client")
KNOWN = (*CONNECTION, "api", "prompt_cache_key")
ANTHROPIC_KNOWN = (*CONNECTION, "max_tokens", "thinking")
APIS = ("chat", "responses")
Client = Literal["accord", "package"]
CLIENTS: tuple[Client, ...] = get_args(Client)
ANTHROPIC_URL = "https://api.anthropic.com"
MIN_THINKING = 1_024  # the Messages API's smallest thinking budget


class _Keyed:
    """An endpoint whose key is read from an environment variable."""

    __slots__ = ()
    base_url: str
    api_key_env: str

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None


@dataclass(frozen=True, slots=True)
class Endpoint(_Keyed):
    base_url: str = "https://api.openai.com/v1"
    api: Literal["chat", "responses"] = "chat"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    attempts: int = 3
    prompt_cache_key: bool = True  # sent (the task id); a server may refuse fields it lacks
    client: Client = "accord"  # what makes the HTTP call: accord's client or the package's


@dataclass(frozen=True, slots=True)
class AnthropicEndpoint(_Keyed):
    base_url: str = ANTHROPIC_URL
    api_key_env: str = "ANTHROPIC_API_KEY"
    timeout_s: float = 120.0
    attempts: int = 3
    max_tokens: int = 8_192  # the most one answer may take (the Messages API requires it)
    # Extended thinking: 0 (off), its budget of tokens per call, or "adaptive" (the model's)
    thinking: int | Literal["adaptive"] = 0
    client: Client = "accord"  # what makes the HTTP call: accord's client or the package's


def parse(value: Any, where: str) -> Endpoint:
    """The endpoint of a ``[harness.openai]`` table; ConfigError naming the setting."""
    fields = check.table(value, where, KNOWN)
    read = _connection(fields, where)
    if "api" in fields:
        api = check.text(fields["api"], f"{where}.api")
        if api not in APIS:
            raise check.refuse(f"{where}.api", " or ".join(repr(a) for a in APIS), api)
        read["api"] = api
    if "prompt_cache_key" in fields:
        read["prompt_cache_key"] = check.boolean(
            fields["prompt_cache_key"], f"{where}.prompt_cache_key"
        )
    endpoint = Endpoint(**read)
    refuse_key_in_clear(endpoint, where)
    return endpoint


def parse_anthropic(value: Any, where: str) -> AnthropicEndpoint:
    """The endpoint of a ``[harness.anthropic]`` table; ConfigError naming the setting."""
    fields = check.table(value, where, ANTHROPIC_KNOWN)
    read = _connection(fields, where)
    if read.get("base_url", "").endswith("/v1"):
        raise ConfigError(
            f"{where}.base_url: the server's root, without /v1 (the anthropic package adds "
            f"/v1/messages), e.g. {ANTHROPIC_URL}"
        )
    if "max_tokens" in fields:
        read["max_tokens"] = check.integer(fields["max_tokens"], f"{where}.max_tokens")
        if read["max_tokens"] < 1:
            raise ConfigError(f"{where}.max_tokens: at least 1")
    if "thinking" in fields:
        read["thinking"] = _thinking(fields["thinking"], read.get("max_tokens", 8_192), where)
    endpoint = AnthropicEndpoint(**read)
    refuse_key_in_clear(endpoint, where)
    return endpoint


def _thinking(value: Any, max_tokens: int, where: str) -> int | Literal["adaptive"]:
    if value == "adaptive":
        return "adaptive"
    expected = f'0 (off), "adaptive", or a budget from {MIN_THINKING} to less than max_tokens'
    if isinstance(value, bool) or not isinstance(value, int):
        raise check.refuse(f"{where}.thinking", expected, value)
    if value and not MIN_THINKING <= value < max_tokens:
        raise ConfigError(f"{where}.thinking: {expected} ({max_tokens}), got {value}")
    return value


def _connection(fields: dict[str, Any], where: str) -> dict[str, Any]:
    """The settings every endpoint has: where it is, its key's variable, how long and how
    often a call is tried."""
    read: dict[str, Any] = {}
    if "base_url" in fields:
        read["base_url"] = check.url(fields["base_url"], f"{where}.base_url").rstrip("/")
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
    if "client" in fields:
        client = check.text(fields["client"], f"{where}.client")
        if client not in CLIENTS:
            raise check.refuse(f"{where}.client", " or ".join(repr(c) for c in CLIENTS), client)
        read["client"] = client
    return read


def refuse_key_in_clear(endpoint: _Keyed, where: str) -> None:
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
