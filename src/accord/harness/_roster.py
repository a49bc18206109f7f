"""The harness's agent roster: the other A2A agents it works with, by participant id.

::

    [[harness.agents]]
    id = "helper"                                   # its participant id on our tasks
    card = "https://helper.example.com"              # its agent card (or the base URL serving it)
    credentials = { bearer_env = "HELPER_TOKEN" }   # or { api_key_env = "HELPER_KEY" }, or "none"

A channel message for an agent participant on the roster is delivered to it as a
SendMessage to its own A2A endpoint (accord.harness.channels._outbox); sub-tasks delegated to
an agent are made and followed there (accord.harness.delegation._remote). The card is read
with accord's client (:mod:`accord.client`), which talks to the agent over the first
interface its card lists that accord speaks (the binding it prefers), sending the agent's
credentials: a token read from the environment when it is used, never from the file, and
never sent in clear (a plain ``http://`` card URL to another machine is refused at start).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from accord import config as check
from accord.client import (
    ApiKey,
    BearerToken,
    Client,
    ClientError,
    CredentialsProvider,
    RetryPolicy,
    Timeouts,
)
from accord.config import ConfigError
from accord.harness._wire import PARTICIPANT_HEADER
from accord.harness.models._endpoint import is_loopback

KNOWN = ("id", "card", "credentials")
CREDENTIAL_KINDS = {"bearer_env": "bearer", "api_key_env": "api_key"}
MAX_AGENTS = 256


@dataclass(frozen=True, slots=True)
class Credentials:
    """How the harness proves who it is to an agent: a bearer token or an API key read
    from the environment variable ``env`` at each use, or nothing."""

    kind: Literal["none", "bearer", "api_key"] = "none"
    env: str = ""

    def secret(self) -> str:
        value = os.environ.get(self.env, "")
        if not value:  # (checked at start; the variable went away since)
            raise RuntimeError(f"${self.env} is not set")
        return value

    def provider(self) -> CredentialsProvider | None:
        if self.kind == "bearer":
            return BearerToken(self.secret)
        if self.kind == "api_key":
            return ApiKey(self.secret)
        return None


@dataclass(frozen=True, slots=True)
class RosterAgent:
    id: str
    card: str
    credentials: Credentials = Credentials()


def parse_agents(value: Any, where: str, agent_id: str) -> tuple[RosterAgent, ...]:
    """The ``[[harness.agents]]`` entries; ConfigError naming the setting (``where`` is
    ``…harness.agents``)."""
    if not isinstance(value, list):
        raise check.refuse(where, "an array of tables ([[harness.agents]])", value)
    if len(value) > MAX_AGENTS:
        raise ConfigError(f"{where}: at most {MAX_AGENTS} agents")
    agents: list[RosterAgent] = []
    for index, item in enumerate(value):
        at = f"{where}[{index}]"
        fields = check.table(item, at, KNOWN)
        for key in KNOWN:
            if key not in fields:
                raise ConfigError(f"{at}.{key}: missing")
        agent = RosterAgent(
            id=check.text(fields["id"], f"{at}.id", empty=False),
            card=check.url(fields["card"], f"{at}.card"),
            credentials=_credentials(fields["credentials"], f"{at}.credentials"),
        )
        if agent.id == agent_id:
            raise ConfigError(f"{at}.id: {agent.id!r} is the harness's own agent_id")
        if any(a.id == agent.id for a in agents):
            raise ConfigError(f"{at}.id: {agent.id!r} is listed twice")
        _refuse_credentials_in_clear(agent, at)
        agents.append(agent)
    return tuple(agents)


def _credentials(value: Any, where: str) -> Credentials:
    if value == "none":
        return Credentials()
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in CREDENTIAL_KINDS:
        expected = '"none", { bearer_env = "VAR" } or { api_key_env = "VAR" }'
        raise check.refuse(where, expected, value)
    [(key, env)] = value.items()
    env = check.text(env, f"{where}.{key}", empty=False)
    if not os.environ.get(env):
        raise ConfigError(f"{where}.{key}: ${env} is not set")
    return Credentials(CREDENTIAL_KINDS[key], env)  # type: ignore[arg-type]


def _refuse_credentials_in_clear(agent: RosterAgent, where: str) -> None:
    parts = urlsplit(agent.card)
    if agent.credentials.kind == "none" or parts.scheme != "http":
        return
    if not is_loopback(parts.hostname or ""):
        raise ConfigError(
            f"{where}.card: refusing to send credentials over plain HTTP to "
            f"{parts.hostname}: use https://, or a loopback address"
        )


@dataclass(eq=False)
class _Connection:
    client: Client
    users: int = 0
    stale: bool = False  # failed: the next use makes a new one (reading the card again)


class Roster:
    """The agents, and a client for each, shared by whoever talks to it (made when first
    used, reading its card then; made again after a failure: an agent that moved is found
    at its card URL)."""

    def __init__(
        self, agents: Sequence[RosterAgent] = (), *, timeout_s: float = 10.0, participant: str = ""
    ) -> None:
        """``participant``: the harness's own id, asserted (``X-Participant-Id``) to the
        agents it has no credentials for, as tiny-harness servers in open mode read it."""
        self.agents = {agent.id: agent for agent in agents}
        self.timeout_s = timeout_s
        self.participant = participant
        self._connections: dict[str, _Connection] = {}
        self._making: dict[str, asyncio.Lock] = {}

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(self.agents)

    def get(self, agent_id: str) -> RosterAgent | None:
        return self.agents.get(agent_id)

    @asynccontextmanager
    async def connect(self, agent_id: str) -> AsyncIterator[Client]:
        """A client for the agent, for the block (KeyError: no such agent; accord.client's
        errors when its card cannot be read). A block that fails with a client or network
        error leaves the client to be made again for the next one."""
        connection = await self._connection(agent_id)
        connection.users += 1
        try:
            yield connection.client
        except (ClientError, OSError):
            connection.stale = True
            if self._connections.get(agent_id) is connection:
                del self._connections[agent_id]
            raise
        finally:
            connection.users -= 1
            if connection.stale and connection.users == 0:
                await connection.client.aclose()

    async def _connection(self, agent_id: str) -> _Connection:
        agent = self.agents[agent_id]
        async with self._making.setdefault(agent_id, asyncio.Lock()):
            connection = self._connections.get(agent_id)
            if connection is None:
                timeout = self.timeout_s
                asserted = agent.credentials.kind == "none" and self.participant
                client = await Client.from_url(
                    agent.card,
                    headers={PARTICIPANT_HEADER: self.participant} if asserted else None,
                    credentials=agent.credentials.provider(),
                    timeouts=Timeouts(connect=timeout, request=timeout),
                    retry=RetryPolicy(max_attempts=0),  # (the caller retries, durably)
                )
                connection = self._connections[agent_id] = _Connection(client)
            return connection

    async def aclose(self) -> None:
        connections, self._connections = self._connections, {}
        for connection in connections.values():
            await connection.client.aclose()
