"""Server settings: defaults, then a TOML file, then ``ACCORD_*`` environment variables, then
command-line flags — each later source overrides the earlier ones. A value that does not fit
its setting is refused with the source and the setting named (``accord.toml: port: expected
an integer, got 'abc'``, ``ACCORD_PORT: …``, ``--port: …``)."""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from accord import config as check
from accord.agents import CardDescription, parse_card
from accord.config import ConfigError
from accord.server import host_port, reachable_host

if TYPE_CHECKING:  # (imported when their tables are read: see _checked)
    from accord.contracts import ContractSettings, Identity
    from accord.harness import HarnessSettings
    from accord.media import MediaSettings

ENV_PREFIX = "ACCORD_"
HTTP_SERVERS = ("accord", "uvicorn")
LOG_LEVELS = ("debug", "info", "warning", "error")
TRACING = ("off", "otlp", "console")
LOG_FORMATS = ("text", "json")


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
    # The gRPC interface's URL in the card; default: public_url's host (else host) and
    # grpc_port.
    grpc_public_url: str = ""
    # [card]: name, description, version, provider, links, skills, media types (over the
    # agent module's own `card`); see accord.agents._description.
    card: CardDescription = field(default_factory=CardDescription)
    # [harness]: the harness agent's settings (--agent harness); see docs/harness.md.
    harness: HarnessSettings | None = None  # read (and the harness imported) only when given
    # --- interaction contracts (docs/contracts.md) --------------------------------------
    # [identity]: this agent's id and Ed25519 keys (card signing, signed acceptances);
    # [contracts]: lifetimes, windows, the sweeper, the peers. See
    # accord.contracts._settings.
    identity: Identity | None = None
    contracts: ContractSettings | None = None
    # [media]: files in messages, stored and served from /media (docs/media.md); None: the
    # defaults (on for --agent harness, off otherwise).
    media: MediaSettings | None = None
    streaming: bool = True
    push_notifications: bool = True
    extended_card: bool = False
    strict_input_modes: bool = False  # refuse parts outside the card's default_input_modes
    require_auth: bool = True  # when credentials are configured, every request must carry one
    api_keys: dict[str, Principal] = field(default_factory=dict)
    bearer_tokens: dict[str, Principal] = field(default_factory=dict)
    # [[principals]] and [jwt]: see accord.auth._config and docs/authentication.md
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
    # Retention (docs/server.md, "Retention"): ended tasks older than this many days are
    # deleted with everything of theirs, by a sweep every retention_sweep_s on every node.
    # None keeps every task (tiny-harness deletes after 30 days).
    retention_days: float | None = None
    retention_sweep_s: float = 60.0
    # Rate limits per caller (docs/server.md, "Rate limits"): a token bucket per principal
    # of rate_limit_per_minute tokens a minute, holding rate_limit_burst (default: a minute's
    # worth), for the rate_limit_principals most recent callers; None: no limit (tiny-harness
    # limits each peer address to 120 a minute).
    rate_limit_per_minute: float | None = None
    rate_limit_burst: int | None = None
    rate_limit_principals: int = 10_000
    # PostgreSQL: one bucket per caller for every node (a statement per request) instead of
    # one per node.
    rate_limit_shared: bool = False
    recovery_interval_s: float = (
        30.0  # PostgreSQL clusters: how often to look for dead nodes' tasks
    )
    # PostgreSQL clusters: how often to look for nodes that died (one query), whose tasks are
    # then recovered at once; 0: only every recovery_interval_s.
    liveness_interval_s: float = 0.5
    # PostgreSQL: hold an advisory lock per running task so other nodes' recovery spares it.
    # false only for a single node (docs/scale-out.md).
    task_holds: bool = True
    # A run whose writes the store fails (disk full, database away) waits this long for the
    # store to take them; then it is stopped, and its task resumed or failed once the store
    # answers (docs/storage.md, "When the store fails"). 0: at the first failed retry.
    store_outage_s: float = 60.0
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
    # The HTTP server: "accord" (accord.server._h1, the default) or "uvicorn".
    http: str = "accord"
    # accord serve: how many server processes share the port (docs/server.md, "Several
    # processes"); more than 1 only on a store they can share (PostgreSQL), without gRPC.
    processes: int = 1
    keep_alive_s: float = 5.0  # an idle keep-alive connection closes after this
    shutdown_grace_s: float = 5.0  # on SIGTERM, responses in progress get this long
    # --- slow and numerous clients (docs/server.md, "The HTTP server") ---
    # A request body may pause at most body_timeout_s, and must then average body_min_rate
    # bytes/s (else 408; 0 turns either off; accord's server only, uvicorn has none).
    body_timeout_s: float = 20.0
    body_min_rate: int = 500
    max_connections: int = 1024  # open at once; past it, 503 (0: no cap)
    # --- the access log (accord.server._access_log): a line per HTTP request, off by default
    access_log: bool = False
    # --- operations (docs/operations.md): metrics, traces, structured logs, safe retries
    metrics: bool = True  # Prometheus metrics at metrics_path
    metrics_path: str = "/metrics"
    metrics_public: bool = False  # with credentials configured, /metrics needs one unless true
    metrics_tenant_labels: bool = False  # a tenant label on request and task metrics
    tracing: str = "off"  # OpenTelemetry spans: off, otlp (OTEL_EXPORTER_OTLP_*), console
    log_format: str = "text"  # text, or json: one object per line with request/task/trace ids
    # A retried SendMessage (same caller, same messageId) or a call with the same
    # Idempotency-Key within this window gets the first one's result.
    idempotency_window_s: float = 86_400.0
    # false: a messageId alone is no key (only Idempotency-Key is), for clients that reuse a
    # message's id for different messages, against the specification (docs/operations.md).
    retry_by_message_id: bool = True
    # --- the dashboard (accord.dashboard, docs/dashboard.md): served at /ui unless false
    ui: bool = True
    # --- previews of A2A versions not yet released (docs/preview-1.1.md): ["1.1"] turns on
    # what the specification's dev-1.1 branch adds (Task.generation, long-polling GetTask,
    # ifGenerationMatch); empty, accord is A2A 1.0 exactly.
    a2a_preview: list[str] = field(default_factory=list)
    long_poll_max_s: float = 30.0  # a long-polling GetTask answers after this at the latest
    long_poll_max_waiting: int = 1000  # held at once; past it, GetTask answers at once

    @property
    def advertised_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        return f"http://{host_port(reachable_host(self.host), self.port)}"

    @property
    def advertised_grpc_url(self) -> str | None:
        """What the card gives as the gRPC interface's URL (a ``host:port`` target), or None
        without gRPC: never a wildcard bind address."""
        if self.grpc_port is None:
            return None
        if self.grpc_public_url:
            return self.grpc_public_url
        host = urlsplit(self.public_url).hostname if self.public_url else None
        return host_port(host or reachable_host(self.host), self.grpc_port)

    @property
    def auth_configured(self) -> bool:
        return bool(self.api_keys or self.bearer_tokens or self.principals or self.jwt)

    def secrets(self) -> list[str]:
        """Every configured secret, for the log formatter's last guard."""
        found = [*self.api_keys, *self.bearer_tokens]
        for principal in self.principals:
            key = principal.get("api_key")
            if isinstance(key, str):
                found.append(key)
            env = principal.get("api_key_env")
            if isinstance(env, str) and os.environ.get(env):
                found.append(os.environ[env])
        for name in ("secret",):
            value = self.jwt.get(name)
            if isinstance(value, str):
                found.append(value)
        env = self.jwt.get("secret_env")
        if isinstance(env, str) and os.environ.get(env):
            found.append(os.environ[env])
        return found

    @property
    def loopback_only(self) -> bool:
        return self.host in ("127.0.0.1", "localhost", "::1")


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
# Tables with secrets or structure: from the TOML file only, never the environment.
FILE_ONLY = (
    "api_keys",
    "bearer_tokens",
    "principals",
    "jwt",
    "card",
    "harness",
    "identity",
    "contracts",
    "media",
)
# Settings that moved into the [card] table: an old file gets told where.
MOVED = {
    "name": "card.name",
    "description": "card.description",
    "input_modes": "card.default_input_modes",
    "output_modes": "card.default_output_modes",
}
CHOICES = {
    "http": HTTP_SERVERS,
    "log_level": LOG_LEVELS,
    "tracing": TRACING,
    "log_format": LOG_FORMATS,
}
MAX_PROCESSES = 256  # processes: a node's cores, with room to spare
PREVIEWS = ("1.1",)  # a2a_preview: the versions whose preview accord has
NOT_NEGATIVE = (  # 0 turns them off
    "body_timeout_s",
    "body_min_rate",
    "max_connections",
    "store_outage_s",
    "liveness_interval_s",
)


# Settings that must be more than 0.
POSITIVE = (
    "idempotency_window_s",
    "retention_sweep_s",
    "rate_limit_per_minute",
    "rate_limit_burst",
    "rate_limit_principals",
)


def _checked(name: str, value: Any, where: str, source: str) -> Any:
    """``value`` (from TOML, the environment or a flag) as setting ``name`` wants it; ``where``
    names the value in errors, ``source`` the file or variable it came from."""
    if name in ("api_keys", "bearer_tokens"):
        return _principals(value, where)
    if name == "card":
        return parse_card(value, source)
    if name == "harness":
        from accord.harness import parse as parse_harness

        return parse_harness(value, source)
    if name == "media":
        from accord.media import parse_media

        return parse_media(value, source)
    if name in ("identity", "contracts"):
        from accord.contracts import _settings as contract_settings

        if name == "identity":
            return contract_settings.parse_identity(value, source)
        return contract_settings.parse_contracts(value, source)
    kind = str(_FIELDS[name].type)
    if "None" in kind and (
        value is None or (isinstance(value, str) and value.strip().lower() in ("", "none"))
    ):
        return None
    base = kind.split("|")[0].strip()
    if base == "bool":
        checked: Any = check.boolean(value, where)
    elif base == "int":
        checked = check.integer(value, where)
    elif base == "float":
        checked = check.number(value, where)
    elif base == "str":
        checked = check.text(value, where)
    elif base == "list[str]":
        checked = check.texts(value, where, split=True)
    else:  # the auth tables: accord.auth._config checks them
        return value
    if name in ("port", "grpc_port"):
        # Port 0 asks the system for a free HTTP port (the card and log show the one bound);
        # gRPC is off by leaving grpc_port unset.
        check.port(checked, where, allow_zero=name == "port")
    elif name in NOT_NEGATIVE and checked < 0:
        raise ConfigError(f"{where}: expected 0 (off) or more, got {check.shown(checked)}")
    elif name in CHOICES and checked not in CHOICES[name]:
        raise ConfigError(
            f"{where}: expected one of {', '.join(CHOICES[name])}, got {check.shown(checked)}"
        )
    elif name == "host" and checked.startswith("[") and checked.endswith("]"):
        checked = checked[1:-1]  # [::1] as a URL writes it
    elif name == "public_url" and checked:
        check.url(checked, where)
    elif name == "metrics_path" and (not checked.startswith("/") or checked.rstrip("/") == ""):
        raise ConfigError(f"{where}: expected a path such as /metrics, got {check.shown(checked)}")
    elif name in POSITIVE and checked <= 0:
        raise ConfigError(f"{where}: expected a positive number, got {checked}")
    elif name == "a2a_preview" and (unknown := [v for v in checked if v not in PREVIEWS]):
        raise ConfigError(
            f"{where}: expected versions among {', '.join(PREVIEWS)}, got {check.shown(unknown[0])}"
        )
    elif name == "processes" and not 1 <= checked <= MAX_PROCESSES:
        raise ConfigError(
            f"{where}: expected a number of processes from 1 to {MAX_PROCESSES}, "
            f"got {check.shown(checked)}"
        )
    elif name in ("long_poll_max_s", "long_poll_max_waiting", "retention_days") and checked < 0:
        raise ConfigError(f"{where}: expected 0 or more, got {check.shown(checked)}")
    return checked


def _principals(value: Any, where: str) -> dict[str, Principal]:
    if not isinstance(value, dict):
        raise check.refuse(where, 'a table of "secret" = { identity = …, tenant = … }', value)
    out: dict[str, Principal] = {}
    for secret, who in value.items():
        # The secret itself never appears in an error.
        if isinstance(who, str):
            out[secret] = Principal(identity=who)
            continue
        fields = check.table(who, f"{where}.<secret>", ("identity", "tenant"))
        if "identity" not in fields:
            raise ConfigError(f"{where}.<secret>.identity: missing")
        out[secret] = Principal(
            identity=check.text(fields["identity"], f"{where}.<secret>.identity", empty=False),
            tenant=check.text(fields.get("tenant", ""), f"{where}.<secret>.tenant"),
        )
    return out


def _read_file(path: str) -> dict[str, Any]:
    try:
        with Path(path).open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    table = data.get("accord", data)
    if not isinstance(table, dict):
        raise check.refuse(f"{path}: accord", "a table", table)
    return table


def load(config_path: str | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings from the defaults, the TOML file (``config_path`` or ``ACCORD_CONFIG``), the
    ``ACCORD_*`` environment and ``overrides`` (the command line's flags; None is unset).
    Raises :class:`ConfigError` naming the file, variable or flag of a refused value."""
    values: dict[str, Any] = {}
    path = config_path or os.environ.get(ENV_PREFIX + "CONFIG")
    if path:
        for key, value in _read_file(path).items():
            name = check.snake_case(key)
            if name in MOVED:
                raise ConfigError(f"{path}: {key}: now set in the [card] table, as {MOVED[name]}")
            if name not in _FIELDS:
                raise ConfigError(f"{path}: unknown setting {key!r}")
            values[name] = _checked(name, value, f"{path}: {key}", path)
    for name in (*_FIELDS, *MOVED):
        variable = ENV_PREFIX + name.upper()
        env = os.environ.get(variable)
        if env is None or name in FILE_ONLY:
            continue
        if name in MOVED:
            raise ConfigError(
                f"{variable}: now set in the settings file's [card] table, as {MOVED[name]}"
            )
        values[name] = _checked(name, env, variable, variable)
    for name, value in (overrides or {}).items():
        if value is not None:
            flag = "--" + name.replace("_", "-")
            values[name] = _checked(name, value, flag, flag)
    return dataclasses.replace(Settings(), **values)
