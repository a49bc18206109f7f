"""The transport interface: one binding's way of carrying the eleven operations.

The :class:`~accord.client.Client` speaks wire models (``accord.wire``) to a transport and
never sees HTTP or gRPC; adding a binding means writing one :class:`Transport` subclass and
registering a factory for its ``protocolBinding`` name with :func:`register_transport`.

Each call gets a :class:`CallMeta`: the headers to send (``A2A-Version``, ``A2A-Extensions``,
credentials; gRPC sends them as metadata) and the timeout. Requests already carry the
interface's tenant. Failures are raised as :mod:`accord.client._errors` exceptions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import httpx

from accord.client._options import Timeouts
from accord.wire import (
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
    Wire,
)

T = TypeVar("T", bound=Wire)


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


class MethodTransport(Transport):
    """A binding that names each operation by its method (JSON-RPC, gRPC): the eleven
    operations are written once here on top of three calls a binding provides."""

    @abstractmethod
    async def _unary(self, method: str, request: Wire, type_: type[T], meta: CallMeta) -> T:
        """Call ``method`` and decode its answer as ``type_``."""

    @abstractmethod
    async def _unary_empty(self, method: str, request: Wire, meta: CallMeta) -> None:
        """Call ``method``, whose answer is empty."""

    @abstractmethod
    def _stream(
        self, method: str, request: Wire, meta: CallMeta, last_event_id: str = ""
    ) -> AsyncIterator[StreamItem]:
        """Call a server-streaming ``method``."""

    async def send_message(
        self, request: SendMessageRequest, meta: CallMeta
    ) -> SendMessageResponse:
        return await self._unary("SendMessage", request, SendMessageResponse, meta)

    def send_streaming_message(
        self, request: SendMessageRequest, meta: CallMeta
    ) -> AsyncIterator[StreamItem]:
        return self._stream("SendStreamingMessage", request, meta)

    async def get_task(self, request: GetTaskRequest, meta: CallMeta) -> Task:
        return await self._unary("GetTask", request, Task, meta)

    async def list_tasks(self, request: ListTasksRequest, meta: CallMeta) -> ListTasksResponse:
        return await self._unary("ListTasks", request, ListTasksResponse, meta)

    async def cancel_task(self, request: CancelTaskRequest, meta: CallMeta) -> Task:
        return await self._unary("CancelTask", request, Task, meta)

    def subscribe_to_task(
        self, request: SubscribeToTaskRequest, meta: CallMeta, last_event_id: str = ""
    ) -> AsyncIterator[StreamItem]:
        return self._stream("SubscribeToTask", request, meta, last_event_id)

    async def create_push_config(
        self, request: TaskPushNotificationConfig, meta: CallMeta
    ) -> TaskPushNotificationConfig:
        return await self._unary(
            "CreateTaskPushNotificationConfig", request, TaskPushNotificationConfig, meta
        )

    async def get_push_config(
        self, request: GetTaskPushNotificationConfigRequest, meta: CallMeta
    ) -> TaskPushNotificationConfig:
        return await self._unary(
            "GetTaskPushNotificationConfig", request, TaskPushNotificationConfig, meta
        )

    async def list_push_configs(
        self, request: ListTaskPushNotificationConfigsRequest, meta: CallMeta
    ) -> ListTaskPushNotificationConfigsResponse:
        return await self._unary(
            "ListTaskPushNotificationConfigs",
            request,
            ListTaskPushNotificationConfigsResponse,
            meta,
        )

    async def delete_push_config(
        self, request: DeleteTaskPushNotificationConfigRequest, meta: CallMeta
    ) -> None:
        await self._unary_empty("DeleteTaskPushNotificationConfig", request, meta)

    async def get_extended_card(
        self, request: GetExtendedAgentCardRequest, meta: CallMeta
    ) -> AgentCard:
        return await self._unary("GetExtendedAgentCard", request, AgentCard, meta)


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
