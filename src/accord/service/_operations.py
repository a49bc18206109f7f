"""The eleven A2A operations, once, for every binding.

A binding decodes its request into the operation's wire message, establishes the :class:`Call`
(who asks, which extensions, where a stream resumes) and calls the handler; it then encodes
the result, a stream, or the :class:`A2AError` the handler raised, its own way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from accord.core import Caller, negotiation, views
from accord.core import client as client_commands
from accord.engine import PAGE_TOKEN_SECRET, Engine, StreamItem
from accord.service._access import Reader, in_tenant, reader
from accord.service._bounds import Bounds
from accord.service._feed import FeedHub
from accord.service._preview import Preview, long_poll, without_preview
from accord.service._rate import RateLimiter
from accord.wire import (
    UNSET,
    A2AError,
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    ErrorKind,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    SendMessageRequest,
    SendMessageResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)

Stream = AsyncIterator[StreamItem | None]


@dataclass
class Service:
    """Everything the operations need: the engine, the cards, the bounds."""

    engine: Engine
    card: AgentCard
    extended_card: AgentCard | None = None
    bounds: Bounds = field(default_factory=Bounds)
    heartbeat_s: float = 15.0
    preview: Preview = field(default_factory=Preview)  # the A2A 1.1 preview (off by default)
    # The cards (card, extended card) for the app reached at a base URL: a mounted app's
    # cards name the URL it is mounted at (accord.asgi); None: the cards above, always.
    cards_at: Callable[[str], tuple[AgentCard, AgentCard | None]] | None = None
    # Rate limits per caller on every binding (accord.service._rate); None: none.
    rate_limiter: RateLimiter | None = None
    _hub: FeedHub | None = field(default=None, init=False, repr=False, compare=False)
    _token_key: bytes | None = field(default=None, init=False, repr=False, compare=False)

    def reader(self, caller: Caller, tenant: str | None = None) -> Reader:
        """``caller`` reading in ``tenant`` (None: its own): what the reads of
        accord.service._reads take (accord.service._access has the rules)."""
        return reader(self.engine, caller, tenant)

    @property
    def hub(self) -> FeedHub:
        """What wakes this service's feed readers (listening to the engine's commits from
        its first use on)."""
        if self._hub is None:
            self._hub = FeedHub(self.engine)
        return self._hub

    async def page_token_key(self) -> bytes:
        """The key that signs page tokens: ListTasks's own, so a token is good for either."""
        if self._token_key is None:  # (the store keeps it for good: read once)
            self._token_key = await self.engine.store.shared_secret(PAGE_TOKEN_SECRET)
        return self._token_key

    @property
    def streaming(self) -> bool:
        return self.card.capabilities.streaming is True

    @property
    def push_notifications(self) -> bool:
        return self.card.capabilities.push_notifications is True


@dataclass(slots=True)
class Call:
    caller: Caller
    extensions: list[str] = field(default_factory=list)
    last_event_id: int | None = None
    # The binding writes JSON: a result may be msgspec.Raw ProtoJSON, passed through unread.
    json_out: bool = False
    # The Idempotency-Key header ("" for none): a retried call gets the first one's answer.
    idempotency_key: str = ""
    # Mounted under a prefix (accord.asgi): the URL the app is reached at, prefix included,
    # which the cards name; "" when the app is served at its own root.
    base_url: str = ""


def negotiate(service: Service, version: str | None, extensions_header: str | None) -> list[str]:
    """Version and extension checks every operation passes first; the activated extensions."""
    error = negotiation.check_version(version)
    if error is not None:
        raise error
    declared = service.card.capabilities.extensions
    if not extensions_header and not declared:
        return []  # nothing asked for, nothing required: the common case, kept cheap
    requested = negotiation.parse_extensions([extensions_header] if extensions_header else [])
    check = negotiation.check_extensions(requested, declared)
    if check.error is not None:
        raise check.error
    return check.activated


def scoped(call: Call, tenant: str) -> Caller:
    """The caller acting in the request's tenant (accord.service._access's rule): an
    authenticated caller is bound to its own tenant; naming another one finds nothing of it."""
    return in_tenant(call.caller, tenant)


# --- handlers ------------------------------------------------------------------------------


async def send_message(service: Service, request: SendMessageRequest, call: Call) -> Any:
    service.bounds.check_message(request.message)
    if not service.preview.generations:
        request = without_preview(request)
    result = await service.engine.send_message(
        request, scoped(call, request.tenant), call.extensions, call.idempotency_key
    )
    if isinstance(result, Task):
        return SendMessageResponse(task=result)
    return SendMessageResponse(message=result)


async def send_streaming_message(
    service: Service, request: SendMessageRequest, call: Call
) -> Stream:
    if not service.streaming:
        raise A2AError(ErrorKind.UNSUPPORTED_OPERATION, "this agent does not stream")
    service.bounds.check_message(request.message)
    if not service.preview.generations:
        request = without_preview(request)
    return await service.engine.send_streaming_message(
        request,
        scoped(call, request.tenant),
        call.extensions,
        service.heartbeat_s,
        call.idempotency_key,
    )


async def get_task(service: Service, request: GetTaskRequest, call: Call) -> Any:
    history_length = views.history_length(request.history_length)
    caller = scoped(call, request.tenant)
    if service.preview.generations and request.current_generation is not UNSET:
        return await long_poll(service.preview, service.engine, request, caller, history_length)
    if call.json_out and history_length is None:
        return msgspec.Raw(await service.engine.get_task_json(request.id, caller))
    return await service.engine.get_task(request.id, caller, history_length)


async def list_tasks(service: Service, request: ListTasksRequest, call: Call) -> Any:
    return await service.engine.list_tasks(request, scoped(call, request.tenant))


async def cancel_task(service: Service, request: CancelTaskRequest, call: Call) -> Any:
    caller = scoped(call, request.tenant)
    return await service.engine.retries.once(
        caller,
        call.idempotency_key,
        "CancelTask",
        request,
        lambda: service.engine.cancel_task(request.id, caller),
        Task,
    )


async def subscribe_to_task(
    service: Service, request: SubscribeToTaskRequest, call: Call
) -> Stream:
    if not service.streaming:
        raise A2AError(ErrorKind.UNSUPPORTED_OPERATION, "this agent does not stream")
    return await service.engine.subscribe(
        request.id, scoped(call, request.tenant), call.last_event_id, service.heartbeat_s
    )


def _require_push(service: Service) -> None:
    if not service.push_notifications:
        raise A2AError(
            ErrorKind.PUSH_NOT_SUPPORTED, "this agent does not support push notifications"
        )


async def create_push_config(
    service: Service, request: TaskPushNotificationConfig, call: Call
) -> Any:
    _require_push(service)
    caller = scoped(call, request.tenant)
    return await service.engine.retries.once(
        caller,
        call.idempotency_key,
        "CreateTaskPushNotificationConfig",
        request,
        lambda: service.engine.create_push_config(request, caller),
        TaskPushNotificationConfig,
    )


async def get_push_config(
    service: Service, request: GetTaskPushNotificationConfigRequest, call: Call
) -> Any:
    _require_push(service)
    return await service.engine.get_push_config(
        request.task_id, request.id, scoped(call, request.tenant)
    )


async def list_push_configs(
    service: Service, request: ListTaskPushNotificationConfigsRequest, call: Call
) -> Any:
    _require_push(service)
    configs = await service.engine.list_push_configs(request.task_id, scoped(call, request.tenant))
    return ListTaskPushNotificationConfigsResponse(configs=configs)


async def delete_push_config(
    service: Service, request: DeleteTaskPushNotificationConfigRequest, call: Call
) -> Any:
    _require_push(service)
    caller = scoped(call, request.tenant)

    async def delete() -> dict[str, Any]:
        await service.engine.delete_push_config(request.task_id, request.id, caller)
        return {}

    return await service.engine.retries.once(
        caller, call.idempotency_key, "DeleteTaskPushNotificationConfig", request, delete, dict
    )


async def get_extended_card(
    service: Service, request: GetExtendedAgentCardRequest, call: Call
) -> Any:
    outcome = client_commands.get_extended_card(
        declared=service.card.capabilities.extended_agent_card is True,
        configured=service.extended_card is not None,
    )
    if outcome.error is not None:
        raise outcome.error
    if not call.caller.authenticated:
        raise A2AError(ErrorKind.UNAUTHENTICATED, "the extended agent card needs authentication")
    if call.base_url and service.cards_at is not None:
        return service.cards_at(call.base_url)[1]
    return service.extended_card


@dataclass(frozen=True, slots=True)
class Operation:
    name: str
    request_type: type[Any]
    handler: Callable[[Service, Any, Call], Awaitable[Any]]
    streaming: bool = False
    domain: str = "a2a.tasks"
    # The qualified name (``a2a.tasks.SendMessage``): its row in accord.core._grants, and the
    # command surface's name for the same command.
    command: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "command", f"{self.domain}.{self.name}")


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation("SendMessage", SendMessageRequest, send_message),
        Operation("SendStreamingMessage", SendMessageRequest, send_streaming_message, True),
        Operation("GetTask", GetTaskRequest, get_task),
        Operation("ListTasks", ListTasksRequest, list_tasks),
        Operation("CancelTask", CancelTaskRequest, cancel_task),
        Operation("SubscribeToTask", SubscribeToTaskRequest, subscribe_to_task, True),
        Operation(
            "CreateTaskPushNotificationConfig", TaskPushNotificationConfig, create_push_config
        ),
        Operation(
            "GetTaskPushNotificationConfig", GetTaskPushNotificationConfigRequest, get_push_config
        ),
        Operation(
            "ListTaskPushNotificationConfigs",
            ListTaskPushNotificationConfigsRequest,
            list_push_configs,
        ),
        Operation(
            "DeleteTaskPushNotificationConfig",
            DeleteTaskPushNotificationConfigRequest,
            delete_push_config,
        ),
        Operation(
            "GetExtendedAgentCard",
            GetExtendedAgentCardRequest,
            get_extended_card,
            domain="a2a.discovery",
        ),
    )
}
