"""Assemble a running server from Settings: store, engine, cards, bindings."""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from accord.agents import (
    AgentLoadError,
    CardDescription,
    CardExtensions,
    DeclaresMediaTypes,
    Endpoint,
    LoadedAgent,
    ReadsMedia,
    ServesEndpoint,
    WorksBesideEngine,
    checked_agent,
    load_agent,
)
from accord.app._settings import Principal, Settings
from accord.auth import PrincipalAuthenticator, parse_auth
from accord.core import Caller, Limits
from accord.engine import Claims, Engine, EngineConfig, RemoteAgent
from accord.errors import require
from accord.push import PushDispatcher, PushSettings
from accord.server import A2AApplication, AdminEndpoint, Binding, BrowserPolicy, MetricsEndpoint
from accord.service import (
    RATE_BUCKETS,
    Bounds,
    CardSettings,
    Preview,
    RateLimiter,
    Service,
    build_card,
)
from accord.store import POSTGRES_SCHEMES, SharedStore, TaskStore, open_store
from accord.surface import SurfaceApp
from accord.telemetry import ActivityHistory, RequestMetrics, Sources
from accord.telemetry import _tracing as tracing
from accord.wire import (
    AgentCard,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)


def _callers(table: dict[str, Principal]) -> dict[str, Caller]:
    return {
        secret: Caller(identity=p.identity, tenant=p.tenant, authenticated=True)
        for secret, p in table.items()
    }


def push_dispatcher(engine: Engine, settings: Settings) -> PushDispatcher:
    return PushDispatcher(
        engine.store,
        PushSettings(
            allow=tuple(settings.push_allow_hosts),
            timeout_s=settings.push_timeout_s,
            max_attempts=settings.push_max_attempts,
            retry_base_s=settings.push_retry_base_s,
            retry_max_s=settings.push_retry_max_s,
            concurrency=settings.push_concurrency,
            poll_interval_s=settings.push_poll_interval_s,
        ),
    )


def harness_agent(settings: Settings) -> Any:
    """The harness agent of ``--agent harness``, from the settings' ``[harness]`` table."""
    if settings.harness is None:
        raise AgentLoadError(
            "agent 'harness': the settings file has no [harness] table (at least "
            'model = "scripted:PATH"; see docs/harness.md)'
        )
    from accord.harness import from_settings

    return from_settings(settings.harness)


def declared_card(agent: Any) -> CardDescription:
    """The media types an agent object declares it takes and gives (DeclaresMediaTypes:
    the harness's own media types, say)."""
    if not isinstance(agent, DeclaresMediaTypes):
        return CardDescription()
    return CardDescription(
        default_input_modes=list(agent.input_modes),
        default_output_modes=list(agent.output_modes),
    )


def check_extras(settings: Settings, agent: Any = None) -> None:
    """Raise :class:`MissingExtra` naming the extra to install when the settings ask for a
    part whose dependencies are not installed, before anything is built."""
    if agent is None and settings.agent == "harness":
        require("harness", "the harness (--agent harness)")
    if settings.store.partition("://")[0] in POSTGRES_SCHEMES:
        require("postgres", "a PostgreSQL store")
    if settings.grpc_port is not None:
        require("grpc", "gRPC (grpc_port)")
    if settings.http == "uvicorn":
        require("uvicorn", 'http = "uvicorn"')


def build_app(settings: Settings, agent: Any = None) -> A2AApplication:
    """The application ``settings`` describe, serving ``agent`` (default: the one the
    settings name): store, engine, the agent's features, and the bindings that serve them."""
    check_extras(settings, agent)
    if settings.tracing != "off":  # before anything is built: the parts look once
        tracing.configure(settings.tracing, service_name=settings.card.name or "accord")
    auth = PrincipalAuthenticator(
        parse_auth(settings.principals, settings.jwt),
        static_bearer=_callers(settings.bearer_tokens),
        static_keys=_callers(settings.api_keys),
    )
    loaded = _agent(settings, agent)
    card_settings = _card_settings(settings, loaded, auth)
    card, extended = _cards(settings, card_settings)

    @functools.lru_cache(maxsize=16)
    def cards_at(base: str) -> tuple[AgentCard, AgentCard | None]:
        """The cards of the app mounted and reached at ``base`` (accord.asgi)."""
        return _cards(settings, dataclasses.replace(card_settings, public_url=base, mounted=True))

    store = open_store(settings.store)
    engine = Engine(
        store,
        loaded.agent,
        _engine_config(settings, card_settings, remote=isinstance(loaded.agent, RemoteAgent)),
        # Several nodes on one PostgreSQL database wake each other's followers.
        bus=store.bus() if isinstance(store, SharedStore) else None,
    )
    if settings.push_notifications:
        engine.attach_push(push_dispatcher(engine, settings))
    # (media's gate first: the gates after it, the harness's, see the files rewritten)
    ingest = _media(settings, engine, loaded.agent)
    if isinstance(loaded.agent, WorksBesideEngine):  # (the harness's deliveries, its gate)
        loaded.agent.attach_engine(engine)
    service = Service(
        engine=engine,
        card=card,
        extended_card=extended,
        bounds=Bounds(
            max_body_bytes=settings.max_body_bytes,
            max_parts=settings.max_parts,
            max_depth=settings.max_depth,
        ),
        heartbeat_s=settings.heartbeat_s,
        preview=Preview(
            generations="1.1" in settings.a2a_preview,
            long_poll_max_s=settings.long_poll_max_s,
            long_poll_max_waiting=settings.long_poll_max_waiting,
        ),
        cards_at=cards_at,
        rate_limiter=_rate_limiter(settings, store),
    )
    if settings.access_log:
        # Asked for explicitly: shown whatever log_level says of the rest.
        logging.getLogger("accord.access").setLevel(logging.INFO)
    metrics = metrics_endpoint(settings, engine, auth)
    activity = _activity(engine, metrics) if settings.ui else None
    return A2AApplication(
        service,
        auth,
        require_auth=settings.require_auth,
        browsers=BrowserPolicy.configure(
            open_mode=not auth.configured,
            public_url=settings.public_url,
            allowed_hosts=settings.allowed_hosts,
            cors_origins=settings.cors_origins,
            cors_headers=settings.cors_headers,
            cors_max_age_s=settings.cors_max_age_s,
        ),
        access_log=settings.access_log,
        metrics=metrics,
        metrics_path=settings.metrics_path,
        endpoints=_endpoints(settings, service, auth, loaded.agent, activity, ingest),
        public_url=settings.public_url,
    )


def _rate_limiter(settings: Settings, store: TaskStore) -> RateLimiter | None:
    """The rate limits the settings ask for: per node, or on PostgreSQL with
    ``rate_limit_shared`` one bucket per caller for every node (the store's table)."""
    if settings.rate_limit_per_minute is None:
        return None
    shared = None
    if settings.rate_limit_shared and isinstance(store, SharedStore):
        access = store.extend(RATE_BUCKETS)
        if access.dialect == "postgresql":
            shared = access
    return RateLimiter(
        settings.rate_limit_per_minute,
        settings.rate_limit_burst,
        settings.rate_limit_principals,
        shared=shared,
    )


# The agents --agent names that the application builds itself (the others: accord.agents'
# built-ins, or module:attribute).
BUILT_HERE: dict[str, Callable[[Settings], Any]] = {
    "remote": lambda settings: RemoteAgent(),
    "harness": harness_agent,
}


def _agent(settings: Settings, agent: Any) -> LoadedAgent:
    if agent is not None:
        return LoadedAgent(checked_agent(agent))
    factory = BUILT_HERE.get(settings.agent)
    if factory is not None:
        return LoadedAgent(factory(settings))
    return load_agent(settings.agent)


def _card_settings(
    settings: Settings, loaded: LoadedAgent, auth: PrincipalAuthenticator
) -> CardSettings:
    """What the card says: the settings' [card] over the module's own ``card``, over what
    the agent declares of itself (CardSettings has the defaults); the extensions of the
    agent and of contracts; the interfaces and the security schemes."""
    schemes: dict[str, SecurityScheme] = {}
    if auth.has_api_keys:
        schemes["apiKey"] = SecurityScheme(
            api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
        )
    if auth.has_bearer:
        schemes["bearer"] = SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="Bearer", bearer_format="JWT" if settings.jwt else ""
            )
        )
    extensions = loaded.agent.card_extensions() if isinstance(loaded.agent, CardExtensions) else []
    if settings.identity is not None:  # interaction contracts: the agent's id and keys
        from accord.contracts import _setup as contract_setup

        extensions += contract_setup.card_extensions(settings.identity)
    if media_on(settings, loaded.agent):
        from accord.media import MediaSettings, card_extension

        extensions.append(
            card_extension(settings.media or MediaSettings(), settings.advertised_url)
        )
    return CardSettings(
        **settings.card.over(loaded.card.over(declared_card(loaded.agent))).given(),
        extensions=extensions,
        public_url=settings.advertised_url,
        grpc_url=settings.advertised_grpc_url,
        streaming=settings.streaming,
        push_notifications=settings.push_notifications,
        extended_card=settings.extended_card,
        security_schemes=schemes,
        security_requirements=(
            [SecurityRequirement(schemes={name: StringList()}) for name in schemes]
            if settings.require_auth
            else []
        ),
    )


def _cards(settings: Settings, card_settings: CardSettings) -> tuple[AgentCard, AgentCard | None]:
    """The card, and the extended card when there is one; signed when contracts are on."""
    card = build_card(card_settings)
    extended = None
    if settings.extended_card:
        extended = build_card(
            dataclasses.replace(
                card_settings,
                description=card_settings.description
                + " (extended card for authenticated clients)",
            )
        )
    identity = settings.identity
    if identity is not None:
        from accord.contracts import _setup as contract_setup

        now_ms = time.time_ns() // 1_000_000
        card = contract_setup.signed(card, identity, now_ms)
        extended = contract_setup.signed(extended, identity, now_ms) if extended else None
    return card, extended


def _engine_config(
    settings: Settings, card_settings: CardSettings, *, remote: bool
) -> EngineConfig:
    return EngineConfig(
        limits=Limits(
            tasks_per_tenant=settings.tasks_per_tenant,
            messages_per_task=settings.messages_per_task,
            push_configs_per_task=settings.push_configs_per_task,
        ),
        streaming=settings.streaming,
        push_notifications=settings.push_notifications,
        input_modes=_strict_modes(card_settings.default_input_modes, settings.identity)
        if settings.strict_input_modes
        else None,
        retention_ms=int(settings.retention_days * 86_400_000)
        if settings.retention_days is not None
        else None,
        retention_interval_s=settings.retention_sweep_s,
        # Remote mode: a task waiting for a worker is not left behind by a restart.
        resumable=remote,
        recovery_interval_s=settings.recovery_interval_s,
        liveness_interval_s=settings.liveness_interval_s,
        task_holds=settings.task_holds,
        idempotency_window_ms=int(settings.idempotency_window_s * 1000),
        retry_by_message_id=settings.retry_by_message_id,
        store_outage_s=settings.store_outage_s,
        generations="1.1" in settings.a2a_preview,
    )


def media_on(settings: Settings, agent: Any) -> bool:
    """Whether the server takes files in messages (``[media]``; by default on for an agent
    that reads them, the harness)."""
    from accord.media import MediaSettings

    return (settings.media or MediaSettings()).on(reads_media=isinstance(agent, ReadsMedia))


def _media(settings: Settings, engine: Engine, agent: Any) -> Any:
    """Media on the engine (accord.media), when it is on; None when not."""
    if not media_on(settings, agent):
        return None
    from accord.media import MediaSettings, attach

    return attach(settings.media or MediaSettings(), engine, agent, settings.advertised_url)


def _endpoints(
    settings: Settings,
    service: Service,
    auth: PrincipalAuthenticator,
    agent: Any,
    activity: ActivityHistory | None = None,
    ingest: Any = None,
) -> list[Endpoint]:
    """What the application serves beside A2A, in the order it asks them: the command
    surface, the contracts API, the dashboard (/ui … before HTTP+JSON, whose tenant prefix
    would take /ui/x), the agent's own endpoint."""
    engine = service.engine
    endpoints: list[Endpoint] = []
    claims = None
    if isinstance(agent, RemoteAgent):
        agent.bind(engine)
        # Nodes on one PostgreSQL database grant and reap the same claims.
        store = engine.store
        table = store.claim_table() if isinstance(store, SharedStore) else None
        claims = Claims(engine, int(settings.claim_lease_s * 1000), engine.clock, table)
        engine.on_start(claims.start)
    endpoints.append(
        SurfaceApp(
            service,
            auth,
            require_auth=settings.require_auth,
            claims=claims,
            api_key=auth.has_api_keys,
            bearer=auth.has_bearer,
        )
    )
    endpoints.append(AdminEndpoint(Binding(service, auth, settings.require_auth)))
    if settings.identity is not None:
        from accord.contracts import _setup as contract_setup

        endpoints.append(
            contract_setup.attach(
                service,
                auth,
                settings.identity,
                settings.contracts,
                require_auth=settings.require_auth,
                max_body=settings.max_body_bytes,
                public_url=settings.advertised_url,
                agent=agent,
            )
        )
    if ingest is not None:
        from accord.media import endpoint as media_endpoint

        endpoints.append(media_endpoint(ingest, Binding(service, auth, settings.require_auth)))
    if settings.ui:
        from accord.dashboard import DashboardApp

        endpoints.append(
            DashboardApp(service, auth, require_auth=settings.require_auth, activity=activity)
        )
    own = _inbound(agent, settings.max_body_bytes)
    if own is not None:
        endpoints.append(own)
    return endpoints


def _inbound(agent: Any, max_body: int) -> Endpoint | None:
    """The agent's own HTTP endpoint, if it has one (the harness's push doorbell)."""
    return agent.inbound_endpoint(max_body) if isinstance(agent, ServesEndpoint) else None


def _activity(engine: Engine, metrics: MetricsEndpoint | None) -> ActivityHistory:
    """The last hour of this server's metrics for the dashboard's Activity page, sampled
    beside the engine from its start (none of the requests' numbers with ``metrics = false``)."""
    activity = ActivityHistory(metrics.sources.requests if metrics is not None else None)

    async def sample() -> None:
        engine.spawn(activity.run())

    engine.on_start(sample)
    return activity


def metrics_endpoint(settings: Settings, engine: Engine, auth: Any) -> MetricsEndpoint | None:
    """``/metrics`` of this server (docs/operations.md), or None with ``metrics = false``."""
    if not settings.metrics:
        return None
    push = engine.push
    return MetricsEndpoint(
        Sources(
            RequestMetrics(tenant_labels=settings.metrics_tenant_labels),
            engine,
            push.stats if isinstance(push, PushDispatcher) else None,
            tenant_labels=settings.metrics_tenant_labels,
        ),
        auth,
        public=settings.metrics_public,
    )


def _strict_modes(modes: list[str], identity: Any) -> tuple[str, ...]:
    """The media types a strict server takes: the card's, and contract notices when the
    agent makes contracts."""
    if identity is None:
        return tuple(modes)
    from accord.contracts import NOTICE_MEDIA_TYPE

    return (*modes, NOTICE_MEDIA_TYPE)
