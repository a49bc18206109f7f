"""The errors of accord's model HTTP client, in accord's one error tree: each says, in one
line, what went wrong with the exchange; the adapters read them as they read the providers'
packages' errors (accord.harness.models._adapter)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from accord.errors import AccordError


class HTTPError(AccordError):
    """A model call's HTTP exchange failed."""


class ConnectFailed(HTTPError):
    """No connection to the endpoint (or through its proxy) could be opened: refused, a name
    that does not resolve, the connect timeout, TLS, a proxy that said no. The cause is
    chained."""


class TimedOut(HTTPError):
    """Nothing came within the call's timeout: before the answer's head (``stalled`` False)
    or in the middle of its body (``stalled`` True)."""

    def __init__(self, says: str, *, stalled: bool) -> None:
        super().__init__(says)
        self.stalled = stalled


class BrokenAnswer(HTTPError):
    """The connection closed, or sent what is not HTTP/1.1, before the answer was whole."""


class RefusedAnswer(HTTPError):
    """The answer broke one of the client's bounds (its head's size, its headers' count)."""


class StatusError(HTTPError):
    """The endpoint answered with an HTTP error status (400 and above): its status, headers
    (lowercase names) and the start of its body."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status = status
        self.headers = dict(headers)
        self.body = body
        self.error = _error_of(body)
        super().__init__(f"HTTP {status}: {self.message}")

    @property
    def message(self) -> str:
        """The server's message: its JSON ``error.message`` (or ``message``), else its body's
        start as text."""
        said = self.error.get("message") if self.error else None
        if isinstance(said, str) and said:
            return said
        text = self.body[:500].decode("utf-8", "replace").strip()
        return text or "(no message)"

    @property
    def kind(self) -> str:
        """The error's ``type`` (or ``code``) in its JSON body, or empty."""
        if not self.error:
            return ""
        return str(self.error.get("type") or "")

    @property
    def code(self) -> str:
        return str(self.error.get("code") or "") if self.error else ""


def _error_of(body: bytes) -> dict[str, object]:
    """The ``error`` object of a JSON error body (``{"error": {...}}`` or the object itself)."""
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(parsed, dict):
        return {}
    inner = parsed.get("error")
    if isinstance(inner, dict):
        return inner
    if isinstance(inner, str):
        return {"message": inner}
    return parsed
