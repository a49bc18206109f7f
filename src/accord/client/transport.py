"""The transport interface: one binding's way of carrying the eleven operations.

The :class:`~accord.client.Client` speaks wire models (``accord.wire``) to a transport and
never sees HTTP or gRPC; adding a binding means writing one :class:`Transport` subclass and
registering a factory for its ``protocolBinding`` name with :func:`register_transport`.

Each call gets a :class:`CallMeta`: the headers to send (``A2A-Version``, ``A2A-Extensions``,
credentials; gRPC sends them as metadata) and the timeout. Requests already carry the
interface's tenant. Failures are raised as :mod:`accord.client.errors` exceptions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx

from accord.client.options import Timeouts
from accord.wire.model import (
    AgentCard,
    AgentInterface,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)


@dataclass(frozen=True, slots=True)
class CallMeta:
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None  # seconds; None = no limit


@dataclass(frozen=True, slots=True)
class StreamItem:
    """One stream event, with the SSE id and retry hint when the binding has them."""

    response: StreamResponse
    event_id: str = ""
    retry_ms: int | None = None


class Transport(ABC):
    """One binding. Streaming methods are async iterators that end when the server closes."""

    binding: str = ""

    @abstractmethod
    async def send_message(
        self, request: SendMessageRequest, meta: CallMeta
    ) -> SendMessageResponse: ...

    @abstractmethod
    def send_streaming_message(
        self, request: SendMessageRequest, meta: CallMeta
    ) -> AsyncIterator[StreamItem]: ...

    @abstractmethod
    async def get_task(self, request: GetTaskRequest, meta: CallMeta) -> Task: ...

    @abstractmethod
    async def list_tasks(self, request: ListTasksRequest, meta: CallMeta) -> ListTasksResponse: ...

    @abstractmethod
    async def cancel_task(self, request: CancelTaskRequest, meta: CallMeta) -> Task: ...

    @abstractmethod
    def subscribe_to_task(
        self, request: SubscribeToTaskRequest, meta: CallMeta, last_event_id: str = ""
    ) -> AsyncIterator[StreamItem]:
        """Follow a task; ``last_event_id`` asks an SSE server to resume after that event."""

    @abstractmethod
    async def create_push_config(
        self, request: TaskPushNotificationConfig, meta: CallMeta
    ) -> TaskPushNotificationConfig: ...

    @abstractmethod
    async def get_push_config(
        self, request: GetTaskPushNotificationConfigRequest, meta: CallMeta
    ) -> TaskPushNotificationConfig: ...

    @abstractmethod
    async def list_push_configs(
        self, request: ListTaskPushNotificationConfigsRequest, meta: CallMeta
    ) -> ListTaskPushNotificationConfigsResponse: ...

    @abstractmethod
    async def delete_push_config(
        self, request: DeleteTaskPushNotificationConfigRequest, meta: CallMeta
    ) -> None: ...

    @abstractmethod
    async def get_extended_card(
        self, request: GetExtendedAgentCardRequest, meta: CallMeta
    ) -> AgentCard: ...

    async def aclose(self) -> None:  # noqa: B027 - most transports own nothing
        """Release what the transport owns (the shared HTTP client is not its own)."""


@dataclass(frozen=True, slots=True)
class TransportContext:
    """What a factory gets to build a transport for one interface."""

    interface: AgentInterface
    http: httpx.AsyncClient
    timeouts: Timeouts


TransportFactory = Callable[[TransportContext], Transport]

_REGISTRY: dict[str, TransportFactory] = {}


def register_transport(binding: str, factory: TransportFactory) -> None:
    """Make ``binding`` (a card's ``protocolBinding``, e.g. ``"GRPC"``) usable by clients."""
    _REGISTRY[binding.upper()] = factory


def transport_factory(binding: str) -> TransportFactory | None:
    return _REGISTRY.get(binding.upper())


def registered_bindings() -> list[str]:
    return list(_REGISTRY)
