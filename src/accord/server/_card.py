"""The agent card, served with HTTP caching headers; mounted under a prefix (accord.asgi), the
card that names the URL the app is reached at."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from email.utils import formatdate

from accord.server._http import JSON, Request, Send, respond
from accord.wire import AgentCard, encode

# The scope key under which a mounted app notes the URL it is reached at (prefix included).
BASE_URL_KEY = "accord.base_url"
# Distinct base URLs a mounted app keeps cards for (one per Host a client names, mostly one).
MAX_BASES = 16


class _Body:
    __slots__ = ("body", "etag")

    def __init__(self, card: AgentCard) -> None:
        self.body = encode(card)
        self.etag = b'"' + hashlib.sha256(self.body).hexdigest()[:32].encode() + b'"'


class CardEndpoint:
    """``GET /.well-known/agent-card.json`` with ETag, Last-Modified, Cache-Control and 304.

    ``cards_at`` (a mounted app's): the card for the app reached at a base URL, for requests
    that carry one (:data:`BASE_URL_KEY`), kept for the :data:`MAX_BASES` latest bases."""

    def __init__(
        self,
        card: AgentCard,
        max_age: int = 300,
        modified_s: float | None = None,
        cards_at: Callable[[str], AgentCard] | None = None,
    ) -> None:
        self._own = _Body(card)
        self.last_modified = formatdate(modified_s or time.time(), usegmt=True).encode()
        self.cache_control = b"public, max-age=%d" % max_age
        self._cards_at = cards_at
        self._at: OrderedDict[str, _Body] = OrderedDict()

    @property
    def body(self) -> bytes:
        return self._own.body

    @property
    def etag(self) -> bytes:
        return self._own.etag

    def _for(self, base: str) -> _Body:
        found = self._at.get(base)
        if found is None:
            assert self._cards_at is not None
            found = self._at[base] = _Body(self._cards_at(base))
            if len(self._at) > MAX_BASES:
                self._at.popitem(last=False)
        else:
            self._at.move_to_end(base)
        return found

    async def handle(self, request: Request, send: Send) -> None:
        base = request.scope.get(BASE_URL_KEY)
        card = self._for(base) if base and self._cards_at is not None else self._own
        headers = [
            (b"etag", card.etag),
            (b"last-modified", self.last_modified),
            (b"cache-control", self.cache_control),
        ]
        if base:  # the card depends on the Host a client named
            headers.append((b"vary", b"Host"))
        match = request.headers.get("if-none-match")
        if match is not None and card.etag.decode() in {m.strip() for m in match.split(",")}:
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        await respond(send, 200, card.body, JSON, headers)
