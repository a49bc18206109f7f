"""What every binding does before its operation runs: authenticate, negotiate the version and
extensions, and note where a stream resumes (all from the request's head, before a byte of
its body is read); then check the operation's grant (accord.core.grants)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from accord.core.caller import ANONYMOUS, OPEN, Caller
from accord.core.grants import granted, required_actor
from accord.server.auth import Authenticator
from accord.server.event_ids import event_number
from accord.server.http import Request
from accord.server.operations import Call, Service, negotiate
from accord.wire.errors import A2AError, ErrorKind, invalid_params


@dataclass
class Binding:
    service: Service
    auth: Authenticator
    require_auth: bool = True
    json_out: ClassVar[bool] = True  # JSON-RPC and HTTP+JSON write JSON; gRPC says False

    def authenticate(self, request: Request) -> Caller:
        if not self.auth.configured:
            return OPEN
        caller = self.auth.authenticate(request.headers)
        if caller is not None:
            return caller
        if self.require_auth or _presented_credentials(request):
            raise A2AError(ErrorKind.UNAUTHENTICATED, "missing or invalid credentials")
        return ANONYMOUS

    def prepare(self, request: Request) -> Call:
        caller = self.authenticate(request)
        participant = request.headers.get("x-participant-id")
        if participant:  # (an assertion only: the harness decides what it is worth)
            caller = dataclasses.replace(caller, participant=participant)
        extensions = negotiate(
            self.service,
            request.service_parameter("a2a-version"),
            request.service_parameter("a2a-extensions"),
        )
        resume = _last_event_id(request.headers.get("last-event-id"))
        return Call(
            caller=caller, extensions=extensions, last_event_id=resume, json_out=self.json_out
        )

    @staticmethod
    def authorize(caller: Caller, command: str) -> None:
        """PERMISSION_DENIED unless ``caller`` holds the actor ``command`` needs."""
        if granted(caller, command):
            return
        actor = required_actor(command)
        needs = f"the actor {actor}" if actor is not None else "a grant no actor holds"
        raise A2AError(ErrorKind.PERMISSION_DENIED, f"not granted: {command} needs {needs}")

    @staticmethod
    def response_headers(extensions: list[str]) -> list[tuple[bytes, bytes]]:
        if not extensions:
            return []
        return [(b"a2a-extensions", ",".join(extensions).encode())]


def _last_event_id(value: str | None) -> int | None:
    """Where a stream resumes: after the event numbered ``value`` (None: from the start)."""
    if not value or not value.strip():
        return None
    try:
        return event_number(value.strip())
    except ValueError as exc:
        raise invalid_params("Last-Event-ID", f"not an event id this server sent: {exc}") from None


def _presented_credentials(request: Request) -> bool:
    headers = request.headers
    return "authorization" in headers or "x-api-key" in headers
