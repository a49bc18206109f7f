"""The other agents of contracts, over A2A: reading a peer's card (its agent id, its keys,
its endpoint, whether its signature holds) and sending it contract notices.

Only configured peers (``[contracts.peers."agent id"]``) are ever contacted, at the URL
configured for them with the credential configured for them: a document received from a
peer never makes this server call an address of the peer's choosing.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from accord.client import (
    A2AClientError,
    ApiKey,
    BearerToken,
    Client,
    ClientError,
    Timeouts,
    fetch_card,
)
from accord.contracts._errors import (
    NOT_A_PARTY,
    PEER_REFUSED,
    PEER_UNREACHABLE,
    ContractRefusal,
)
from accord.contracts._settings import ContractSettings, Peer
from accord.contracts._wire import (
    CONTRACTS_URI,
    NOTICE_MEDIA_TYPE,
    TRUST_URI,
    Notice,
    Reference,
    notice_data,
)
from accord.signing import KeySet
from accord.signing import _cards as cards
from accord.wire import AgentCard, Message, Part, Role, encode

CARD_TTL_S = 60.0  # a peer's card (and keys) is read again after this, or on an unknown key


@dataclass(frozen=True)
class PeerCard:
    agent_id: str
    keys: KeySet
    endpoint: str  # its JSON-RPC (else first) interface: the transport in documents
    binding: str
    card: AgentCard
    fetched: float


class Peers:
    def __init__(
        self,
        settings: ContractSettings,
        clock: Callable[[], int],
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self._http = http
        self._cards: dict[str, PeerCard] = {}

    def peer(self, agent_id: str) -> Peer:
        peer = self.settings.peers.get(agent_id)
        if peer is None:
            raise ContractRefusal(
                NOT_A_PARTY,
                f'{agent_id!r} is not a configured peer (add [contracts.peers."{agent_id}"])',
            )
        return peer

    def _client_http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(follow_redirects=False)
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _timeouts(self) -> Timeouts:
        seconds = self.settings.notice_timeout_s
        return Timeouts(connect=seconds, request=seconds)

    async def card(self, agent_id: str, *, fresh: bool = False) -> PeerCard:
        """The peer's card, checked: it names ``agent_id`` in accord's contract extension,
        publishes its keys there, and its signature (if it has one) holds."""
        cached = self._cards.get(agent_id)
        if cached is not None and not fresh and time.monotonic() - cached.fetched < CARD_TTL_S:
            return cached
        peer = self.peer(agent_id)
        try:
            card = await fetch_card(self._client_http(), peer.url, timeouts=self._timeouts())
        except ClientError as exc:
            raise ContractRefusal(
                PEER_UNREACHABLE, f"cannot read {agent_id}'s card at {peer.url}: {exc}"
            ) from None
        card_json = json.loads(encode(card))
        published = cards.published_keys(card_json)
        if published is None or published[0] != agent_id:
            raise ContractRefusal(
                PEER_REFUSED,
                f"the card at {peer.url} does not publish agent {agent_id!r} and its keys "
                f"(accord's contract extension, {CONTRACTS_URI})",
            )
        check = cards.verify(card_json, published[1], self.clock())
        if check.status == "invalid":
            raise ContractRefusal(
                PEER_REFUSED, f"{agent_id}'s card signature does not hold: {check.reason}"
            )
        interfaces = card.supported_interfaces
        chosen = next((i for i in interfaces if i.protocol_binding == "JSONRPC"), None)
        chosen = chosen or (interfaces[0] if interfaces else None)
        if chosen is None:
            raise ContractRefusal(PEER_REFUSED, f"{agent_id}'s card lists no interface")
        found = PeerCard(
            agent_id, published[1], chosen.url, chosen.protocol_binding, card, time.monotonic()
        )
        self._cards[agent_id] = found
        return found

    async def send(self, agent_id: str, notice: Notice, reference: Reference) -> str:
        """Deliver ``notice`` to the peer; the status its receipt reports. ContractRefusal:
        peer_unreachable when it cannot be reached, peer_refused (with the peer's reason)
        when it refuses."""
        peer = self.peer(agent_id)
        found = await self.card(agent_id)
        credentials: ApiKey | BearerToken | None = None
        if peer.api_key is not None:
            credentials = ApiKey(peer.api_key)
        elif peer.token is not None:
            credentials = BearerToken(peer.token)
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.USER,
            parts=[Part(data=notice_data(notice), media_type=NOTICE_MEDIA_TYPE)],
            metadata={TRUST_URI: reference.metadata()},
            extensions=[CONTRACTS_URI, TRUST_URI],
        )
        client = Client(
            found.card,
            credentials=credentials,
            extensions=(CONTRACTS_URI, TRUST_URI),
            timeouts=self._timeouts(),
            http_client=self._client_http(),
        )
        try:
            answer = await client.send(message)
        except A2AClientError as exc:
            code = exc.metadata.get("contractReason", "")
            why = f" ({code})" if code else ""
            raise ContractRefusal(
                PEER_REFUSED,
                f"{agent_id} refused the {notice.kind}{why}: {exc.message}",
                interaction_id=notice.interaction_id,
            ) from None
        except ClientError as exc:
            raise ContractRefusal(
                PEER_UNREACHABLE,
                f"cannot deliver the {notice.kind} to {agent_id}: {exc}",
                interaction_id=notice.interaction_id,
            ) from None
        finally:
            await client.aclose()
        return _receipt_status(answer)


def _receipt_status(answer: object) -> str:
    if isinstance(answer, Message):
        for part in answer.parts:
            data = part.data
            if isinstance(data, dict) and data.get("kind") == "receipt":
                return str(data.get("status", ""))
    raise ContractRefusal(PEER_REFUSED, "the peer answered the notice without a receipt")
