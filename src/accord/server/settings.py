"""Server settings: defaults, then a TOML file, then ``ACCORD_*`` environment variables, then
command-line flags — each later source overrides the earlier ones."""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV_PREFIX = "ACCORD_"
HTTP_SERVERS = ("accord", "uvicorn")


@dataclass
class Principal:
    """A configured credential and who it proves."""

    identity: str
    tenant: str = ""


@dataclass
class Settings:
    host: str = "127.0.0.1"
    port: int = 9999
    store: str = "sqlite:///accord.db"
    agent: str = "echo"
    public_url: str = ""  # what the card advertises; default http://host:port
    grpc_port: int | None = None
    name: str = "accord agent"
    description: str = "An A2A agent served by accord."
    streaming: bool = True
    push_notifications: bool = True
    extended_card: bool = False
    strict_input_modes: bool = False
    input_modes: list[str] = field(default_factory=lambda: ["text/plain", "application/json"])
    output_modes: list[str] = field(default_factory=lambda: ["text/plain", "application/json"])
    require_auth: bool = True  # when credentials are configured, every request must carry one
    api_keys: dict[str, Principal] = field(default_factory=dict)
    bearer_tokens: dict[str, Principal] = field(default_factory=dict)
    # [[principals]] and [jwt]: see accord.auth.config and docs/authentication.md
    principals: list[dict[str, Any]] = field(default_factory=list, repr=False)  # has secrets
    jwt: dict[str, Any] = field(default_factory=dict, repr=False)
    # Browsers (docs/server.md, "Browsers"): besides loopback names, the Host names a server
    # without credentials answers; the origins whose pages may call it (CORS, off when empty;
    # "*" only with credentials configured), the request headers they may send besides
    # accord's own, and how long a browser may keep a granted preflight.
    allowed_hosts: list[str] = field(default_factory=list)
    cors_origins: list[str] = field(default_factory=list)
    cors_headers: list[str] = field(default_factory=list)
    cors_max_age_s: int = 600
    claim_lease_s: float = 30.0  # --agent remote: how long a worker's claim lives unrenewed
    max_body_bytes: int = 10 * 1024 * 1024
    max_parts: int = 256
    max_depth: int = 32
    tasks_per_tenant: int | None = None
    messages_per_task: int | None = 1000
    push_configs_per_task: int | None = 10
    retention_days: float | None = None
    recovery_interval_s: float = (
        30.0  # PostgreSQL clusters: how often to look for dead nodes' tasks
    )
    # PostgreSQL: hold an advisory lock per running task so other nodes' recovery spares it.
    # false only for a single node (docs/scale-out.md).
    task_holds: bool = True
    heartbeat_s: float = 15.0
    # Push delivery (docs/push.md). The SSRF guard refuses loopback, private, link-local …
    # targets; host names and CIDRs listed here are admitted anyway.
    push_allow_hosts: list[str] = field(default_factory=list)
    push_timeout_s: float = 10.0
    push_max_attempts: int = 8
    push_retry_base_s: float = 1.0
    push_retry_max_s: float = 300.0
    push_concurrency: int = 64
    push_poll_interval_s: float = 5.0
    log_level: str = "info"
    # The HTTP server: "accord" (accord.server.h1, the default) or "uvicorn".
    http: str = "accord"
    keep_alive_s: float = 5.0  # an idle keep-alive connection closes after this
    shutdown_grace_s: float = 5.0  # on SIGTERM, responses in progress get this long
    # --- the access log (accord.server.access_log): a line per HTTP request, off by default
    access_log: bool = False

    @property
    def advertised_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    @property
    def auth_configured(self) -> bool:
        return bool(self.api_keys or self.bearer_tokens or self.principals or self.jwt)

    @property
    def loopback_only(self) -> bool:
        return self.host in ("127.0.0.1", "localhost", "::1")


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}


def _coerce(name: str, value: Any) -> Any:
    """A value from TOML or the environment, as the field's type wants it."""
    default = getattr(Settings(), name)
    kind = _FIELDS[name].type
    if name in ("api_keys", "bearer_tokens"):
        return {
            secret: Principal(**who) if isinstance(who, dict) else Principal(identity=str(who))
            for secret, who in dict(value).items()
        }
    if isinstance(value, str):
        lowered = value.strip().lower()
        if isinstance(default, bool):
            if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError(f"{name}: expected a boolean, got {value!r}")
            return lowered in ("1", "true", "yes", "on")
        if isinstance(default, list):
            return [item.strip() for item in value.split(",") if item.strip()]
        if "int" in str(kind) and "float" not in str(kind):
            return None if lowered in ("", "none") else int(value)
        if "float" in str(kind):
            return None if lowered in ("", "none") else float(value)
    return value


def load(config_path: str | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    settings = Settings()
    values: dict[str, Any] = {}
    path = config_path or os.environ.get(ENV_PREFIX + "CONFIG")
    if path:
        with Path(path).open("rb") as handle:
            data = tomllib.load(handle)
        data = data.get("accord", data)
        for key, value in data.items():
            name = key.replace("-", "_")
            if name not in _FIELDS:
                raise ValueError(f"{path}: unknown setting {key!r}")
            values[name] = _coerce(name, value)
    for name in _FIELDS:
        env = os.environ.get(ENV_PREFIX + name.upper())
        if env is not None and name not in ("api_keys", "bearer_tokens", "principals", "jwt"):
            values[name] = _coerce(name, env)
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = value
    loaded = dataclasses.replace(settings, **values)
    if loaded.http not in HTTP_SERVERS:
        raise ValueError(f"http: expected one of {', '.join(HTTP_SERVERS)}, got {loaded.http!r}")
    return loaded
