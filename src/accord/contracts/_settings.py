"""The ``[identity]`` and ``[contracts]`` tables of accord's TOML settings.

::

    [identity]
    agent_id = "agent:a"            # this agent's id in contracts (and on its card)
    key_file = "agent-a.key"        # an Ed25519 key (accord keys generate FILE)

    # or several keys, for rotation: each signs while its window is open, and stays
    # published (so what it signed still verifies) as long as it is listed
    [[identity.keys]]
    file = "agent-a-2026.key"
    not_before = "2026-01-01T00:00:00Z"   # optional
    not_after = "2027-01-01T00:00:00Z"    # optional

    [contracts]
    lifetime_s = 259200             # a proposal's lifetime when it names no expiresAt (72 h)
    completion_window_s = 86400     # after one party completes, how long the other has
    sweep_interval_s = 30           # how often expiries, windows, notices and retention run
    clock_skew_s = 300              # how far a peer's acceptedAt may be from our clock
    notice_timeout_s = 10           # how long to wait for the other agent
    require_signed_acceptances = true   # refuse a peer's unsigned (oauth_account) acceptance;
                                    # unset: refused from a peer that publishes keys

    [contracts.peers."agent:b"]     # an agent this one makes contracts with
    url = "https://b.example"       # its base URL (its card is read there)
    api_key_env = "AGENT_B_KEY"     # the credential accord presents there: api_key, token
                                    # or their _env forms
    require_signed_acceptances = false  # this peer's own setting (unset: [contracts]'s)

Every error names the file and the setting.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accord import config as check
from accord.config import ConfigError
from accord.signing import AgentKey, InvalidKeyError, KeySet, load_private_pem
from accord.wire import parse_timestamp

IDENTITY_KNOWN = ("agent_id", "key_file", "keys")
KEY_KNOWN = ("file", "not_before", "not_after")
CONTRACTS_KNOWN = (
    "lifetime_s",
    "completion_window_s",
    "sweep_interval_s",
    "clock_skew_s",
    "notice_timeout_s",
    "require_signed_acceptances",
    "peers",
)
NUMBERS = CONTRACTS_KNOWN[:5]
PEER_KNOWN = ("url", "api_key", "api_key_env", "token", "token_env", "require_signed_acceptances")


@dataclass(frozen=True)
class Identity:
    """Who this agent is in contracts, and its keys (none: acceptances are made by an
    authenticated operator, method ``oauth_account``, and the card is not signed)."""

    agent_id: str
    keys: KeySet = field(default_factory=KeySet)


@dataclass(frozen=True)
class Peer:
    agent_id: str
    url: str
    api_key: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    require_signed_acceptances: bool | None = None  # None: [contracts]'s setting


@dataclass(frozen=True)
class ContractSettings:
    lifetime_s: float = 72 * 3600.0
    completion_window_s: float = 24 * 3600.0
    sweep_interval_s: float = 30.0
    clock_skew_s: float = 300.0
    notice_timeout_s: float = 10.0
    # Whether a peer's acceptance must be signed (ed25519), an unsigned oauth_account one
    # refused even over the peer's authenticated channel. None: when the peer publishes keys.
    require_signed_acceptances: bool | None = None
    peers: dict[str, Peer] = field(default_factory=dict)

    def signed_acceptances_required(self, agent_id: str, publishes_keys: bool) -> bool:
        """Whether ``agent_id``'s acceptances must be signed: its peer's setting, else the
        contracts' one, else whether it publishes keys."""
        peer = self.peers.get(agent_id)
        required = self.require_signed_acceptances
        if peer is not None and peer.require_signed_acceptances is not None:
            required = peer.require_signed_acceptances
        return publishes_keys if required is None else required


def _where(source: str, name: str) -> str:
    return f"{source}: {name}" if source else name


def parse_identity(value: Any, source: str = "") -> Identity:
    where = _where(source, "identity")
    fields = check.table(value, where, IDENTITY_KNOWN)
    if "agent_id" not in fields:
        raise ConfigError(f'{where}.agent_id: missing (e.g. agent_id = "agent:a")')
    agent_id = check.text(fields["agent_id"], f"{where}.agent_id", empty=False)
    if "key_file" in fields and "keys" in fields:
        raise ConfigError(f"{where}.keys: set it or key_file, not both")
    keys: list[AgentKey] = []
    if "key_file" in fields:
        path = check.text(fields["key_file"], f"{where}.key_file", empty=False)
        keys.append(AgentKey.from_private(_load_key(path, f"{where}.key_file")))
    if "keys" in fields:
        entries = fields["keys"]
        if not isinstance(entries, list):
            raise check.refuse(f"{where}.keys", "a list of tables ([[identity.keys]])", entries)
        for index, entry in enumerate(entries):
            keys.append(_key_entry(entry, f"{where}.keys[{index}]"))
    return Identity(agent_id=agent_id, keys=KeySet(keys))


def _key_entry(value: Any, where: str) -> AgentKey:
    fields = check.table(value, where, KEY_KNOWN)
    if "file" not in fields:
        raise ConfigError(f"{where}.file: missing")
    path = check.text(fields["file"], f"{where}.file", empty=False)
    bounds = [_instant(fields.get(name), f"{where}.{name}") for name in KEY_KNOWN[1:]]
    if bounds[0] is not None and bounds[1] is not None and bounds[0] >= bounds[1]:
        raise ConfigError(f"{where}.not_after: must be later than not_before")
    return AgentKey.from_private(_load_key(path, f"{where}.file"), *bounds)


def _instant(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if hasattr(value, "isoformat"):  # TOML's own date-times
        value = value.isoformat()
    text = check.text(value, where, empty=False)
    try:
        return parse_timestamp(text)
    except ValueError:
        expected = "an RFC 3339 time with a zone, like 2026-01-01T00:00:00Z"
        raise check.refuse(where, expected, value) from None


def _load_key(path: str, where: str) -> Any:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read {path} ({exc.strerror or exc})") from None
    try:
        return load_private_pem(data)
    except InvalidKeyError as exc:
        hint = "make one with: accord keys generate FILE"
        raise ConfigError(f"{where}: {path}: {exc} ({hint})") from None


def parse_contracts(value: Any, source: str = "") -> ContractSettings:
    where = _where(source, "contracts")
    fields = check.table(value, where, CONTRACTS_KNOWN)
    numbers: dict[str, float] = {}
    for name in NUMBERS:
        if name in fields:
            number = check.number(fields[name], f"{where}.{name}")
            if number <= 0:
                raise ConfigError(f"{where}.{name}: must be more than 0, got {number:g}")
            numbers[name] = number
    peers: dict[str, Peer] = {}
    table = fields.get("peers", {})
    if not isinstance(table, dict):
        raise check.refuse(f"{where}.peers", 'a table of [contracts.peers."agent id"]', table)
    for agent_id, peer in table.items():
        peers[agent_id] = _peer(str(agent_id), peer, f'{where}.peers."{agent_id}"')
    return ContractSettings(
        **numbers, require_signed_acceptances=_signed(fields, where), peers=peers
    )


def _signed(fields: dict[str, Any], where: str) -> bool | None:
    name = "require_signed_acceptances"
    return check.boolean(fields[name], f"{where}.{name}") if name in fields else None


def _peer(agent_id: str, value: Any, where: str) -> Peer:
    fields = check.table(value, where, PEER_KNOWN)
    if "url" not in fields:
        raise ConfigError(f"{where}.url: missing (the agent's base URL)")
    url = check.url(fields["url"], f"{where}.url").rstrip("/")
    secrets: dict[str, str | None] = {}
    for name in ("api_key", "token"):
        secret = fields.get(name)
        env = fields.get(f"{name}_env")
        if secret is not None and env is not None:
            raise ConfigError(f"{where}.{name}_env: set it or {name}, not both")
        if env is not None:
            variable = check.text(env, f"{where}.{name}_env", empty=False)
            secret = os.environ.get(variable)
            if not secret:
                raise ConfigError(f"{where}.{name}_env: environment variable {variable} is not set")
        secrets[name] = check.text(secret, f"{where}.{name}") if secret is not None else None
    if secrets["api_key"] and secrets["token"]:
        raise ConfigError(f"{where}: give api_key or token, not both")
    return Peer(
        agent_id=agent_id,
        url=url,
        api_key=secrets["api_key"],
        token=secrets["token"],
        require_signed_acceptances=_signed(fields, where),
    )
