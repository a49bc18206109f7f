"""The ``[harness]`` table of accord's TOML settings.

::

    [harness]
    agent_id = "accord"                            # the harness's own participant id
    model = "scripted:examples/harness/hello.json" # what answers a turn
    models = []                                    # other models a task may choose
    system_prompt = "You are …"                    # or system_prompt_file = "prompt.md"
    delegators = []                                # peers trusted to brief tasks fully
    plugins = ["plugins/audit", "accord-audit"]    # plugin directories, installed plugins
    plugins_strict = true                          # a component that cannot load stops the start
    plugin_data = "plugin-data"                    # ${PLUGIN_DATA}: <plugin_data>/<plugin>
    hook_timeout_s = 10                            # a remote hook's answer, at most
    hook_allow_hosts = []                          # hosts the SSRF guard lets hooks reach

    [harness.openai]                               # the endpoint of "openai:NAME" models
    base_url = "https://api.openai.com/v1"         # (accord.harness.models._endpoint)

    [harness.anthropic]                            # the endpoint of "anthropic:NAME" models
    base_url = "https://api.anthropic.com"         # (accord.harness.models._endpoint)

    [[harness.agents]]                             # the agent roster (accord.harness._roster)
    id = "helper"
    card = "https://helper.example.com"
    credentials = { bearer_env = "HELPER_TOKEN" }

    [harness.delivery]                             # channel messages and sub-tasks to
    max_attempts = 20                              # those agents (…channels.outbox)

    max_subtask_depth = 3                          # sub-tasks below a participant's task
    max_subtasks = 16                              # sub-tasks of one task
    push_url = "https://accord.example"            # where delegated agents push to us

Every error names the setting (and the file, when there is one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from accord import config as check
from accord.config import ConfigError
from accord.harness._roster import RosterAgent, parse_agents
from accord.harness.channels._outbox import DeliverySettings, parse_delivery
from accord.harness.core._delegation import Bounds
from accord.harness.models import Model, ScriptedModel
from accord.harness.models import _endpoint as endpoints
from accord.harness.models._adapter import Retry
from accord.harness.models._endpoint import AnthropicEndpoint, Endpoint, is_loopback
from accord.harness.plugins._manifest import is_path
from accord.harness.tools._mcp import McpServerSettings
from accord.harness.tools._mcp import parse as mcp_settings

MODEL_KINDS = ("scripted", "openai", "anthropic")


@dataclass(frozen=True, slots=True)
class HarnessSettings:
    agent_id: str = "accord"
    model: str = ""
    models: tuple[str, ...] = ()
    system_prompt: str = ""
    delegators: tuple[str, ...] = ()
    openai: Endpoint = field(default_factory=Endpoint)  # where openai:NAME models are served
    # where anthropic:NAME models are served
    anthropic: AnthropicEndpoint = field(default_factory=AnthropicEndpoint)
    plugins: tuple[str, ...] = ()
    # A plugin component that cannot load stops the start (False: it is skipped, logged).
    plugins_strict: bool = True
    # Where plugins keep their data: ${PLUGIN_DATA} is <plugin_data>/<plugin name>.
    plugin_data: str = "plugin-data"
    hook_timeout_s: float = 10.0
    hook_allow_hosts: tuple[str, ...] = ()
    max_steps: int = 20  # model calls in one turn, past which it parks saying so
    context_tokens: int = 0  # the model's context budget; past it, compaction (0: none)
    mcp: tuple[McpServerSettings, ...] = ()  # [[harness.mcp]]: tool servers
    # Channels: the agents the harness delivers channel messages to, and how.
    agents: tuple[RosterAgent, ...] = ()
    delivery: DeliverySettings = field(default_factory=DeliverySettings)
    # Sub-tasks: how deep they nest below a task participants started, how many one task has
    max_subtask_depth: int = 3
    max_subtasks: int = 16
    # Where the agents the harness delegates to reach this server (its external base URL):
    # set, a stand-in registers a push config with an agent whose card offers push.
    push_url: str = ""
    # The file the settings came from ("" when not from a file): named in errors found later
    # (a model that cannot be built), as parse names it in its own.
    source: str = field(default="", compare=False)

    @property
    def where(self) -> str:
        """How an error names the table: ``accord.toml: harness``."""
        return f"{self.source}: harness" if self.source else "harness"

    @property
    def bounds(self) -> Bounds:
        return Bounds(max_depth=self.max_subtask_depth, max_children=self.max_subtasks)

    @property
    def selectable(self) -> tuple[str, ...]:
        """The models a task may run on: the default and the allowlist."""
        return tuple(dict.fromkeys((self.model, *self.models)))


KNOWN = (
    "agent_id",
    "model",
    "models",
    "system_prompt",
    "system_prompt_file",
    "delegators",
    "openai",
    "anthropic",
    "plugins",
    "plugins_strict",
    "plugin_data",
    "hook_timeout_s",
    "hook_allow_hosts",
    "max_steps",
    "mcp",
    "context_tokens",
    "agents",
    "delivery",
    "max_subtask_depth",
    "max_subtasks",
    "push_url",
)


def parse(value: Any, source: str = "") -> HarnessSettings:
    """The settings of a ``[harness]`` table; ConfigError naming the file and the setting
    (``harness.toml: harness.model: …``)."""
    where = f"{source}: harness" if source else "harness"
    fields = check.table(value, where, KNOWN)

    def text(key: str, default: str = "", *, empty: bool = True) -> str:
        return check.text(fields.get(key, default), f"{where}.{key}", empty=empty)

    def texts(key: str) -> tuple[str, ...]:
        items = check.texts(fields.get(key, []), f"{where}.{key}")
        for index, item in enumerate(items):
            check.text(item, f"{where}.{key}[{index}]", empty=False)
        return tuple(items)

    if "model" not in fields:
        raise ConfigError(
            f'{where}.model: missing (e.g. model = "scripted:examples/harness/hello.json")'
        )
    model = text("model", empty=False)
    prompt = text("system_prompt")
    prompt_file = text("system_prompt_file")
    if prompt and prompt_file:
        raise ConfigError(f"{where}.system_prompt_file: set it or system_prompt, not both")
    if prompt_file:
        try:
            prompt = Path(prompt_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"{where}.system_prompt_file: cannot read {prompt_file} ({exc.strerror})"
            ) from None
    timeout = check.number(fields.get("hook_timeout_s", 10.0), f"{where}.hook_timeout_s")
    if timeout <= 0:
        raise ConfigError(f"{where}.hook_timeout_s: must be more than 0")
    max_steps = check.integer(fields.get("max_steps", 20), f"{where}.max_steps")
    if not 1 <= max_steps <= 1000:
        raise ConfigError(f"{where}.max_steps: from 1 to 1000, got {max_steps}")
    depth = check.integer(fields.get("max_subtask_depth", 3), f"{where}.max_subtask_depth")
    if not 0 <= depth <= 32:
        raise ConfigError(f"{where}.max_subtask_depth: from 0 (no sub-tasks) to 32, got {depth}")
    fanout = check.integer(fields.get("max_subtasks", 16), f"{where}.max_subtasks")
    if not 0 <= fanout <= 1000:
        raise ConfigError(f"{where}.max_subtasks: from 0 (no sub-tasks) to 1000, got {fanout}")
    budget = check.integer(fields.get("context_tokens", 0), f"{where}.context_tokens")
    if budget and budget < 2_000:
        raise ConfigError(f"{where}.context_tokens: 0 (no compaction) or at least 2000")
    servers = fields.get("mcp", [])
    if not isinstance(servers, list):
        raise check.refuse(f"{where}.mcp", "[[harness.mcp]] tables", servers)
    mcp = tuple(mcp_settings(server, f"{where}.mcp[{i}]") for i, server in enumerate(servers))
    if len({server.name for server in mcp}) != len(mcp):
        raise ConfigError(f"{where}.mcp: two servers have the same name")
    plugins = texts("plugins")
    for index, entry in enumerate(plugins):
        if is_path(entry) and not Path(entry).expanduser().is_dir():
            raise ConfigError(f"{where}.plugins[{index}]: no plugin directory {entry}")
    agent_id = text("agent_id", "accord", empty=False)
    settings = HarnessSettings(
        agent_id=agent_id,
        model=model,
        models=texts("models"),
        system_prompt=prompt,
        delegators=texts("delegators"),
        openai=endpoints.parse(fields.get("openai", {}), f"{where}.openai"),
        anthropic=endpoints.parse_anthropic(fields.get("anthropic", {}), f"{where}.anthropic"),
        plugins=plugins,
        plugins_strict=check.boolean(fields.get("plugins_strict", True), f"{where}.plugins_strict"),
        plugin_data=text("plugin_data", "plugin-data", empty=False),
        hook_timeout_s=timeout,
        hook_allow_hosts=texts("hook_allow_hosts"),
        max_steps=max_steps,
        mcp=mcp,
        context_tokens=budget,
        agents=parse_agents(fields.get("agents", []), f"{where}.agents", agent_id),
        delivery=parse_delivery(fields.get("delivery", {}), f"{where}.delivery"),
        max_subtask_depth=depth,
        max_subtasks=fanout,
        push_url=push_url(fields["push_url"], f"{where}.push_url") if "push_url" in fields else "",
        source=source,
    )
    for name in settings.selectable:
        if name.partition(":")[0] not in MODEL_KINDS:
            key = "model" if name == model else "models"
            kinds = " or ".join(f"{kind}:…" for kind in MODEL_KINDS)
            raise ConfigError(f"{where}.{key}: {name!r} is no model: a model is {kinds}")
    return settings


def push_url(value: Any, where: str) -> str:
    """``[harness] push_url``: this server's base URL as the agents it delegates to reach
    it; https (or a loopback http one), neither query nor fragment (paths go under it)."""
    url = check.url(value, where)
    parts = urlsplit(url)
    if parts.query or parts.fragment:
        raise ConfigError(f"{where}: a base URL, without a query or a fragment")
    if parts.scheme == "http" and not is_loopback(parts.hostname or ""):
        raise ConfigError(
            f"{where}: the push token would travel in clear to {parts.hostname}: use "
            "https://, or a loopback address"
        )
    return url.rstrip("/")


def missing_keys(settings: HarnessSettings) -> list[str]:
    """Warnings for the selectable ``openai:`` and ``anthropic:`` models that would go to
    their provider's own endpoint with no key (each call would fail, unauthorized)."""
    said: list[str] = []
    defaults: dict[str, Endpoint | AnthropicEndpoint] = {
        "openai": Endpoint(),
        "anthropic": AnthropicEndpoint(),
    }
    endpoints: dict[str, Endpoint | AnthropicEndpoint] = {
        "openai": settings.openai,
        "anthropic": settings.anthropic,
    }
    for name in settings.selectable:
        kind = name.partition(":")[0]
        endpoint = endpoints.get(kind)
        if endpoint is None or endpoint.base_url != defaults[kind].base_url:
            continue
        if endpoint.api_key() is None:
            said.append(
                f"harness: the model {name} has no key: ${endpoint.api_key_env} is not set, "
                f"and {endpoint.base_url} wants one (every turn it answers will fail)"
            )
    return said


class ModelFactory:
    """Builds the model a ``kind:argument`` spec names (ValueError when it cannot be);
    ``openai:NAME`` models share one client of the settings' endpoint, and
    ``anthropic:NAME`` models one of theirs."""

    def __init__(self, settings: HarnessSettings) -> None:
        self.endpoint = settings.openai
        self.anthropic = settings.anthropic
        self._clients: dict[str, Any] = {}

    def __call__(self, spec: str) -> Model:
        kind, _, argument = spec.partition(":")
        if kind == "scripted":
            return ScriptedModel.from_file(argument)
        if kind == "openai":
            from accord.harness.models._openai_compatible import OpenAIModel

            return OpenAIModel(
                argument,
                self._client(kind),
                api=self.endpoint.api,
                retry=Retry(attempts=self.endpoint.attempts),
                cache_key=self.endpoint.prompt_cache_key,
            )
        if kind == "anthropic":
            from accord.harness.models._anthropic import AnthropicModel

            return AnthropicModel(
                argument,
                self._client(kind),
                max_tokens=self.anthropic.max_tokens,
                thinking=self.anthropic.thinking,
                retry=Retry(attempts=self.anthropic.attempts),
            )
        raise ValueError(f"model {spec!r}: unknown kind {kind!r}")

    def _client(self, kind: str) -> Any:
        """The one client of the kind's endpoint, made when a model first needs it:
        accord's HTTP client unless the endpoint's ``client`` setting says "package"."""
        if kind not in self._clients:
            from accord.harness.models._clients import endpoint_client

            self._clients[kind] = endpoint_client(
                self.endpoint if kind == "openai" else self.anthropic
            )
        return self._clients[kind]

    async def aclose(self) -> None:
        """Closes the endpoints' clients (their kept connections)."""
        from accord.harness.models._clients import close_client

        clients, self._clients = self._clients, {}
        for client in clients.values():
            await close_client(client)
