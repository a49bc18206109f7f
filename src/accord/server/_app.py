"""The ASGI application: agent card, JSON-RPC at ``POST /``, HTTP+JSON paths, lifespan; and
before any of them, what browsers may do (accord.server._browsers: Host, Origin, CORS).

Mounted under a prefix (a Starlette or FastAPI ``Mount``, uvicorn's ``--root-path``: the
scope's ``root_path``), it answers the paths below the prefix and its cards name the URL it is
reached at (docs/server.md, "Mounting it in another application")."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from accord.agents import Endpoint
from accord.server._access_log import AccessLogged, AccessRecord
from accord.server._auth import Authenticator, NoAuthentication
from accord.server._browsers import BrowserPolicy
from accord.server._card import BASE_URL_KEY, CardEndpoint
from accord.server._errors import rest_error
from accord.server._health import PATHS as HEALTH_PATHS
from accord.server._health import Health
from accord.server._http import JSON, Receive, Request, Scope, Send, respond
from accord.server._jsonrpc import JsonRpcBinding, error_body
from accord.server._log_context import LogContext
from accord.server._request_spans import Traced
from accord.server._rest import RestBinding, route
from accord.service import Service, checks
from accord.store import StoreError
from accord.telemetry import _context as log_context
from accord.telemetry import _tracing as tracing
from accord.wire import A2AError, ErrorKind, encode

if TYPE_CHECKING:
    from accord.server._metrics_endpoint import MetricsEndpoint

log = logging.getLogger("accord.server")

CARD_PATH = "/.well-known/agent-card.json"
# A Host header a mounted app's cards may name: a name or address, and a port.
_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}(?::[0-9]{1,5})?|\[[0-9A-Fa-f:.]{2,45}\](?::[0-9]{1,5})?")


E = TypeVar("E")


@runtime_checkable
class OwnRefusals(Protocol):
    """An endpoint whose refusals (a browser check failed) have a shape of their own."""

    def refusal_body(self, message: str) -> bytes: ...


class A2AApplication:
    def __init__(
        self,
        service: Service,
        auth: Authenticator | None = None,
        *,
        require_auth: bool = True,
        jsonrpc_path: str = "/",
        manage_engine: bool = True,
        browsers: BrowserPolicy | None = None,
        access_log: bool = False,
        metrics: MetricsEndpoint | None = None,
        metrics_path: str = "/metrics",
        endpoints: Sequence[Endpoint] = (),
        public_url: str = "",
    ) -> None:
        self.service = service
        # Mounted: the origin (or the whole URL, prefix included) the cards name; "" takes
        # the scheme and Host of each request.
        self.public_url = public_url.rstrip("/")
        auth = auth or NoAuthentication()
        # Without credentials only loopback Host values are answered; no CORS unless given.
        self.browsers = browsers or BrowserPolicy(check_host=not auth.configured)
        cards_at = service.cards_at
        self.card = CardEndpoint(
            service.card, cards_at=(lambda base: cards_at(base)[0]) if cards_at else None
        )
        # Metrics (accord.telemetry): the bindings count requests; None when off.
        self.metrics = metrics
        self.metrics_path = metrics_path
        requests = metrics.sources.requests if metrics is not None else None
        self.jsonrpc = JsonRpcBinding(service, auth, require_auth, requests)
        self.rest = RestBinding(service, auth, require_auth, requests)
        self.jsonrpc_path = jsonrpc_path
        self._jsonrpc_path = jsonrpc_path.rstrip("/")  # a trailing slash is accepted either way
        self.manage_engine = manage_engine
        self.endpoints = tuple(endpoints)
        self.health = Health(checks(service))
        # Off, the access log and tracing cost nothing: requests go straight to the handler.
        handle: Any = self._http
        if tracing.tracer is not None:  # (accord.telemetry: a span per request)
            handle = Traced(handle, tracing.tracer)
        if log_context.enabled:  # (JSON logs: the request's ids on its lines)
            handle = LogContext(handle)
        self._serve_http = AccessLogged(handle) if access_log else handle

    def endpoint(self, kind: type[E]) -> E | None:
        """The mounted endpoint of type ``kind`` (the command surface, the contracts API …),
        or None."""
        for endpoint in self.endpoints:
            if isinstance(endpoint, kind):
                return endpoint
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            if scope.get("root_path"):
                scope = self._below_prefix(scope)
                if self.manage_engine and not self.service.engine.started:
                    await _not_started(send)
                    return
            await self._serve_http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    def _below_prefix(self, scope: Scope) -> Scope:
        """The scope of a request to the app mounted at ``root_path``: its path below the
        prefix (Starlette keeps the whole path in ``path``; older servers strip it), and the
        URL the app is reached at (:data:`BASE_URL_KEY`), which its cards name."""
        root = str(scope["root_path"]).rstrip("/")
        path = str(scope["path"])
        if path == root:
            path = "/"
        elif path.startswith(root + "/"):
            path = path[len(root) :]
        origin = self.public_url
        if not origin:
            raw = next((v for k, v in scope["headers"] if k == b"host"), b"")
            host = raw.decode("latin-1")
            if not _HOST.fullmatch(host):  # none, or not a host[:port]: the socket's address
                server = scope.get("server") or ("localhost", None)
                host = f"{server[0]}:{server[1]}" if server[1] else str(server[0])
            scheme = "https" if scope.get("scheme") == "https" else "http"
            origin = f"{scheme}://{host}"
        base = origin if origin.endswith(root) else origin + root
        return {**scope, "path": path, BASE_URL_KEY: base}

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The app's engine and store, open for the block: what the ASGI lifespan does, for
        an application that mounts this one (Starlette does not pass its lifespan to mounted
        apps; ``accord.lifespan`` runs this for each)."""
        await self.service.engine.start()
        try:
            yield
        finally:
            await self.service.engine.stop()

    async def _http(
        self, scope: Scope, receive: Receive, send: Send, access: AccessRecord | None = None
    ) -> None:
        request = Request(scope, receive, access)
        path = request.path
        method = request.method
        headers = request.headers
        if method == "OPTIONS" and "access-control-request-method" in headers:
            await self._preflight(request, send)
            return
        refused = self.browsers.refusal(headers)
        if refused is not None:
            await self._refuse(request, send, refused)
            return
        origin = headers.get("origin")
        if origin is not None and self.browsers.allows(origin):
            send = _with_headers(send, self.browsers.response_headers(origin))
        if path == CARD_PATH and method in ("GET", "HEAD"):
            await self.card.handle(request, send)
            return
        if method == "POST" and path.rstrip("/") == self._jsonrpc_path:
            await self.jsonrpc.handle(request, send)
            return
        for endpoint in self.endpoints:
            if endpoint.handles(path):
                await endpoint.handle(request, send)
                return
        routed = route(method, path)
        if routed is not None:
            await self.rest.handle(request, send, routed)
            return
        if path in HEALTH_PATHS and method in ("GET", "HEAD"):  # off the A2A paths' way
            await self.health.handle(path, send)
            return
        if self.metrics is not None and path == self.metrics_path and method == "GET":
            await self.metrics.handle(request, send)
            return
        error = A2AError(ErrorKind.METHOD_NOT_FOUND, f"no operation at {method} {path}")
        await respond(send, 404, encode(rest_error(error)), JSON)

    async def _preflight(self, request: Request, send: Send) -> None:
        granted = self.browsers.preflight(request.headers)
        if isinstance(granted, str):
            await self._refuse(request, send, granted)
            return
        await send({"type": "http.response.start", "status": 204, "headers": granted})
        await send({"type": "http.response.body", "body": b""})

    async def _refuse(self, request: Request, send: Send, message: str) -> None:
        """A request no browser check admits, answered in its binding's own error shape."""
        error = A2AError(ErrorKind.PERMISSION_DENIED, message)
        path = request.path
        if request.method == "POST" and path.rstrip("/") == self._jsonrpc_path:
            await respond(send, 200, error_body(error), JSON)
        else:
            for endpoint in self.endpoints:
                if isinstance(endpoint, OwnRefusals) and endpoint.handles(path):
                    await respond(send, 403, endpoint.refusal_body(message), JSON)
                    return
            await respond(send, 403, encode(rest_error(error)), JSON)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    if self.manage_engine:
                        await self.service.engine.start()
                except StoreError as exc:
                    # The store's message is the useful line (the server logs it); the
                    # traceback is for debugging.
                    log.debug("startup failed", exc_info=True)
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                except Exception as exc:
                    log.exception("startup failed")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.manage_engine:
                    await self.service.engine.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _not_started(send: Send) -> None:
    """A mounted app whose engine was not started: the application mounting it did not run
    its lifespan (Starlette does not pass lifespan events to mounted apps)."""
    error = A2AError(
        ErrorKind.UNAVAILABLE,
        "this agent is not started: run its lifespan in the application that mounts it"
        " (lifespan=accord.lifespan(app), docs/server.md)",
    )
    await respond(send, 503, encode(rest_error(error)), JSON)


def _with_headers(send: Send, extra: list[tuple[bytes, bytes]]) -> Send:
    """``send`` adding ``extra`` to the response's headers."""

    async def sending(message: Any) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *extra]}
        await send(message)

    return sending


def create_app(service: Service, **options: Any) -> A2AApplication:
    return A2AApplication(service, **options)
