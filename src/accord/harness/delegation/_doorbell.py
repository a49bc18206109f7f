"""Pushes from the agents that work on our stand-ins: a doorbell, never data.

A stand-in whose agent offers push notifications registers a push config on its remote task
(accord.harness.delegation._remote) pointing at ``<[harness] push_url>/harness/push/<stand-in>``
with a secret token of its own; the stand-in keeps only the token's SHA-256. When the agent
POSTs there, this endpoint checks the token the A2A push rules put in
``X-A2A-Notification-Token`` against that hash (in constant time) and, when it matches,
rings the stand-in's follow, which reads the remote task itself (GetTask, with our
credentials) and applies what it reads as the stream and the poll do. The body is bounded
and must be a JSON object, and is otherwise ignored: whoever can post here decides at most
*when* we look, never *what* we see.

An unknown stand-in and a wrong or missing token get the same 401 and the same body; the
token is never logged.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import TYPE_CHECKING

import msgspec

from accord.harness.core import _delegation as core
from accord.harness.core._delegation import PushState
from accord.server import JSON, Request, Send, respond
from accord.wire import A2AError, ErrorKind, Task

if TYPE_CHECKING:
    from accord.agents import Host
    from accord.harness.delegation._follower import Follower

log = logging.getLogger("accord.harness.delegation")

PREFIX = "/harness/push/"
TOKEN_HEADER = "x-a2a-notification-token"
MAX_ID = 512  # longer than any stand-in id (<parent>.<n>)
MAX_TOKEN = 512
# (compared against when there is no stand-in, so that an unknown one costs the same)
NO_HASH = hashlib.sha256(b"no stand-in").hexdigest()
REFUSED = json.dumps({"error": "unknown stand-in or wrong token"}).encode()


def digest(token: str) -> str:
    """The SHA-256 (hex) of a token: what a stand-in keeps of it."""
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


class Doorbell:
    def __init__(self, engine: Host, follower: Follower, max_body: int) -> None:
        self.engine = engine
        self.follower = follower
        self.max_body = max_body

    def handles(self, path: str) -> bool:
        return path.startswith(PREFIX)

    async def handle(self, request: Request, send: Send) -> None:
        if request.method != "POST":
            await _answer(send, 405, {"error": "pushes are POSTed"}, (b"allow", b"POST"))
            return
        stand_in = request.path[len(PREFIX) :]  # (the ASGI path is decoded already)
        token = request.headers.get(TOKEN_HEADER, "")
        if not await self._authorized(stand_in, token):
            log.info("a push for stand-in %.80r was refused (unknown, or the wrong token)",
                     stand_in)  # fmt: skip
            await respond(send, 401, REFUSED, JSON)
            return
        try:
            request.require_json()
            body = await request.body(self.max_body)
        except A2AError as exc:
            status = 413 if exc.kind is ErrorKind.PAYLOAD_TOO_LARGE else 415
            await _answer(send, status, {"error": exc.message})
            return
        if not _json_object(body):
            await _answer(send, 400, {"error": "the body must be a JSON object"})
            return
        await self.follower.pushed(stand_in)
        await respond(send, 204, b"", JSON)

    async def _authorized(self, stand_in: str, token: str) -> bool:
        """Whether ``token`` is the one ``stand_in`` registered (the same work either way)."""
        expected = NO_HASH
        if 0 < len(stand_in) <= MAX_ID and "/" not in stand_in:
            record = await self.engine.store.get_task(stand_in, None)
            push = _push_of(record.task) if record is not None else None
            if push is not None:
                expected = push.token_sha256
        matches = hmac.compare_digest(digest(token[:MAX_TOKEN]), expected)
        return matches and 0 < len(token) <= MAX_TOKEN and expected is not NO_HASH


def _push_of(task: Task) -> PushState | None:
    try:
        info = core.info_of(task)
    except msgspec.ValidationError:  # (not a stand-in of ours)
        return None
    return info.remote.push if info is not None and info.remote is not None else None


def _json_object(body: bytes) -> bool:
    try:
        return isinstance(json.loads(body), dict)
    except (ValueError, RecursionError):
        return False


async def _answer(
    send: Send, status: int, body: dict[str, str], *headers: tuple[bytes, bytes]
) -> None:
    await respond(send, status, json.dumps(body).encode(), JSON, headers)
