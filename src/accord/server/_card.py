"""The agent card, served with HTTP caching headers."""

from __future__ import annotations

import hashlib
import time
from email.utils import formatdate

from accord.server._http import JSON, Request, Send, respond
from accord.wire import AgentCard, encode


class CardEndpoint:
    """``GET /.well-known/agent-card.json`` with ETag, Last-Modified, Cache-Control and 304."""

    def __init__(
        self, card: AgentCard, max_age: int = 300, modified_s: float | None = None
    ) -> None:
        self.body = encode(card)
        self.etag = b'"' + hashlib.sha256(self.body).hexdigest()[:32].encode() + b'"'
        self.last_modified = formatdate(modified_s or time.time(), usegmt=True).encode()
        self.cache_control = b"public, max-age=%d" % max_age

    async def handle(self, request: Request, send: Send) -> None:
        headers = [
            (b"etag", self.etag),
            (b"last-modified", self.last_modified),
            (b"cache-control", self.cache_control),
        ]
        match = request.headers.get("if-none-match")
        if match is not None and self.etag.decode() in {m.strip() for m in match.split(",")}:
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        await respond(send, 200, self.body, JSON, headers)
