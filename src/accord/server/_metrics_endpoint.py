"""``GET /metrics`` (docs/operations.md): the Prometheus text of the collector of
:mod:`accord.telemetry._exposition`, behind the server's credentials.

Access: with credentials configured, a scrape needs valid ones unless ``metrics_public``;
with tenant labels on (the series then name tenants), it needs the Agent actor, the one that
sees every tenant's tasks already.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from accord.core import AGENT_ACTOR
from accord.server._auth import Authenticator
from accord.server._errors import rest_error
from accord.server._http import JSON, Request, Send, respond
from accord.telemetry import CONTENT_TYPE, Collector, Sources
from accord.wire import A2AError, ErrorKind, encode


class MetricsEndpoint:
    """The ``/metrics`` handler of one application."""

    def __init__(
        self,
        sources: Sources,
        auth: Authenticator,
        *,
        public: bool = False,
        process: bool = True,
    ) -> None:
        self.sources = sources
        self.auth = auth
        self.public = public
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(Collector(sources))
        if process:  # the process's CPU, memory, file descriptors, GC: per application
            ProcessCollector(registry=self.registry)
            PlatformCollector(registry=self.registry)
            GCCollector(registry=self.registry)

    async def handle(self, request: Request, send: Send) -> None:
        refusal = self.refusal(request)
        if refusal is not None:
            status = refusal.kind.http_status
            await respond(send, status, encode(rest_error(refusal)), JSON)
            return
        await self.sources.refresh()
        body = generate_latest(self.registry)
        await respond(send, 200, body, CONTENT_TYPE, [(b"cache-control", b"no-store")])

    def refusal(self, request: Request) -> A2AError | None:
        if self.public or not self.auth.configured:
            return None
        caller = self.auth.authenticate(request.headers)
        if caller is None:
            return A2AError(ErrorKind.UNAUTHENTICATED, "metrics need credentials")
        if self.sources.tenant_labels and not caller.may(AGENT_ACTOR):
            return A2AError(
                ErrorKind.PERMISSION_DENIED,
                f"metrics with tenant labels need the actor {AGENT_ACTOR}",
            )
        return None
