"""The agent card, built from configuration (accord.server._card serves it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from accord import __version__
from accord.wire import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    SecurityRequirement,
    SecurityScheme,
)

PROTOCOL_VERSION = "1.0"


@dataclass
class CardSettings:
    name: str = "accord agent"
    description: str = "An A2A agent served by accord."
    # The agent's own version ([card] version, or its module's card); without one, the
    # version of accord that serves it (never a made-up 0.0.0).
    version: str = __version__
    public_url: str = "http://127.0.0.1:9999"
    grpc_url: str | None = None  # the gRPC target (host:port) when gRPC is served
    streaming: bool = True
    push_notifications: bool = True
    extended_card: bool = False
    default_input_modes: list[str] = field(
        default_factory=lambda: ["text/plain", "application/json"]
    )
    default_output_modes: list[str] = field(
        default_factory=lambda: ["text/plain", "application/json"]
    )
    skills: list[AgentSkill] = field(default_factory=list)
    extensions: list[AgentExtension] = field(default_factory=list)
    provider: AgentProvider | None = None
    documentation_url: str | None = None
    icon_url: str | None = None
    security_schemes: dict[str, SecurityScheme] = field(default_factory=dict)
    security_requirements: list[SecurityRequirement] = field(default_factory=list)


def build_card(settings: CardSettings) -> AgentCard:
    base = settings.public_url.rstrip("/")
    interfaces = [
        AgentInterface(url=base, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION),
        AgentInterface(url=base, protocol_binding="HTTP+JSON", protocol_version=PROTOCOL_VERSION),
    ]
    if settings.grpc_url:
        interfaces.append(
            AgentInterface(
                url=settings.grpc_url, protocol_binding="GRPC", protocol_version=PROTOCOL_VERSION
            )
        )
    skills = settings.skills or [
        AgentSkill(
            id="default",
            name=settings.name,
            description=settings.description,
            tags=["accord"],
        )
    ]
    card = AgentCard(
        name=settings.name,
        description=settings.description,
        version=settings.version,
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(
            streaming=settings.streaming,
            push_notifications=settings.push_notifications,
            extended_agent_card=settings.extended_card,
            extensions=settings.extensions,
        ),
        default_input_modes=settings.default_input_modes,
        default_output_modes=settings.default_output_modes,
        skills=skills,
        security_schemes=settings.security_schemes,
        security_requirements=settings.security_requirements,
    )
    if settings.provider is not None:
        card.provider = settings.provider
    if settings.documentation_url:
        card.documentation_url = settings.documentation_url
    if settings.icon_url:
        card.icon_url = settings.icon_url
    return card
