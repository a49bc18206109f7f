"""``GET /metrics`` (docs/operations.md): the Prometheus text of the collector of
:mod:`accord.telemetry._exposition`, behind the server's credentials.

Access: with credentials configured, a scrape needs valid ones unless ``metrics_public``;
with tenant labels on (the series then name tenants), it needs the Agent actor, the one that
sees every tenant's tasks already.

Under ``accord serve --processes N`` (:meth:`MetricsEndpoint.join`), the process answering a
scrape answers for the node: its own families and its siblings' (asked over
:mod:`accord.server._node_metrics`), merged by :func:`accord.telemetry.merge`. With one
process nothing of that runs: no socket, the same text as ever.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.gc_collector import GCCollector
from prometheus_client.metrics_core import Metric
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector as PromCollector

from accord.core import AGENT_ACTOR
from accord.server._auth import Authenticator
from accord.server._errors import rest_error
from accord.server._http import JSON, Request, Send, respond
from accord.server._node_metrics import NodeMetrics
from accord.telemetry import (
    CONTENT_TYPE,
    Collector,
    Sources,
    encode_families,
    families_of,
    merge,
    node_gauges,
    to_metrics,
)
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
        self.node: NodeMetrics | None = None
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
        if self.node is None:
            body = generate_latest(self.registry)
        else:
            body = generate_latest(_Fixed(await self.node_metrics(self.node)))
        await respond(send, 200, body, CONTENT_TYPE, [(b"cache-control", b"no-store")])

    def join(self, node: NodeMetrics) -> None:
        """Answer scrapes for the node ``node`` describes, and its siblings' questions from
        the start of this application's engine to its stop."""
        self.node = node
        engine = self.sources.engine

        def own() -> bytes:
            return encode_families(families_of(self.registry.collect(), store_read=False))

        async def start() -> None:
            engine.spawn(node.serve(own))

        engine.on_start(start)

    async def node_metrics(self, node: NodeMetrics) -> list[Metric]:
        """This process's families and its siblings', merged (store gauges already read)."""
        own = families_of(self.registry.collect())
        siblings = await node.ask()
        merged = merge([(node.index, own), *siblings])
        return to_metrics([*merged, *node_gauges(node.processes, 1 + len(siblings))])

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


class _Fixed(PromCollector):
    """Families already collected, for :func:`generate_latest`."""

    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        return iter(self.metrics)
