"""The HTTP+JSON (REST) binding: one path per operation, ProtoJSON bodies.

Paths follow the proto's ``google.api.http`` rules; a non-empty tenant becomes the first path
segment. GET and DELETE put the other fields in camelCase query parameters. Subscribe is sent as
POST (the spec text; servers accept POST and GET).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TypeVar
from urllib.parse import quote

import msgspec

from accord.client._errors import (
    A2AClientError,
    ClientError,
    InvalidResponseError,
    UnexpectedStatusError,
    error_for_http_status,
    error_from_rest,
    is_rest_error_body,
)
from accord.client._http import HttpAnswer, answered, interface_url, request, stream_events
from accord.client._transport import CallMeta, StreamItem, Transport, TransportContext
from accord.wire import (
    UNSET,
    AgentCard,
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
    TaskState,
    Wire,
    WireError,
    decode,
    decode_json,
    encode,
)

T = TypeVar("T")
W = TypeVar("W", bound=Wire)

MEDIA_TYPE = "application/a2a+json"
ACCEPT = "application/a2a+json, application/json"


def _seg(value: str) -> str:
    return quote(value, safe="")


def _without_tenant(message: W) -> W:
    return (
        msgspec.structs.replace(message, tenant="") if getattr(message, "tenant", "") else message
    )


def _error(answer: HttpAnswer) -> ClientError:
    """The error of a failed answer: the A2A error in its body, else the HTTP status."""
    body: object = None
    if answer.content:
        try:
            body = decode_json(answer.content)
        except WireError:
            body = None
    if is_rest_error_body(body):
        return answered(error_from_rest(body, answer.status), answer)
    return answered(
        error_for_http_status(answer.status)
        or UnexpectedStatusError(
            answer.status, answer.content.decode("utf-8", "replace"), answer.url
        ),
        answer,
    )


def _decode(content: bytes | str, type_: type[T]) -> T:
    try:
        return decode(content, type_)
    except WireError as exc:
        raise InvalidResponseError(f"invalid {type_.__name__} in response: {exc}") from None


def _bool(value: bool) -> str:
    return "true" if value else "false"


class RestTransport(Transport):
    binding = "HTTP+JSON"

    def __init__(self, ctx: TransportContext) -> None:
        self._base = interface_url(ctx).rstrip("/")
        self._http = ctx.http
        self._timeouts = ctx.timeouts

    def _url(self, tenant: str, path: str) -> str:
        prefix = f"{self._base}/{_seg(tenant)}" if tenant else self._base
        return prefix + path

    async def _do(
        self,
        method: str,
        url: str,
        meta: CallMeta,
        *,
        body: Wire | None = None,
        params: dict[str, str] | None = None,
    ) -> bytes:
        answer = await request(
            self._http,
            self._timeouts,
            method,
            url,
            meta,
            body=encode(body) if body is not None else None,
            params=params,
            content_type=MEDIA_TYPE,
            accept=ACCEPT,
        )
        if not 200 <= answer.status < 300:
            raise _error(answer)
        return answer.content

    def _stream(
        self, url: str, meta: CallMeta, body: Wire | None, last_event_id: str = ""
    ) -> AsyncIterator[StreamItem]:
        async def events() -> AsyncIterator[StreamItem]:
            async for event in stream_events(
                self._http,
                self._timeouts,
                "POST",
                url,
                meta,
                body=encode(body) if body is not None else None,
                content_type=MEDIA_TYPE,
                last_event_id=last_event_id,
                on_not_sse=_not_sse,
            ):
                if not event.data:
                    continue
                if event.event == "error" or event.data.startswith('{"error"'):
                    try:
                        parsed = decode_json(event.data)
                    except WireError:
                        parsed = None
                    if is_rest_error_body(parsed):
                        raise error_from_rest(parsed, 500)
                yield StreamItem(_decode(event.data, StreamResponse), event.id, event.retry)

        return events()

    async def send_message(
        self, request: SendMessageRequest, meta: CallMeta
    ) -> SendMessageResponse:
        url = self._url(request.tenant, "/message:send")
        content = await self._do("POST", url, meta, body=_without_tenant(request))
        return _decode(content, SendMessageResponse)

    def send_streaming_message(
        self, request: SendMessageRequest, meta: CallMeta
    ) -> AsyncIterator[StreamItem]:
        url = self._url(request.tenant, "/message:stream")
        return self._stream(url, meta, _without_tenant(request))

    async def get_task(self, request: GetTaskRequest, meta: CallMeta) -> Task:
        params = {}
        if request.history_length is not UNSET:
            params["historyLength"] = str(request.history_length)
        if request.current_generation is not UNSET:  # (the A2A 1.1 preview)
            params["currentGeneration"] = str(request.current_generation)
        url = self._url(request.tenant, f"/tasks/{_seg(request.id)}")
        return _decode(await self._do("GET", url, meta, params=params), Task)

    async def list_tasks(self, request: ListTasksRequest, meta: CallMeta) -> ListTasksResponse:
        params: dict[str, str] = {}
        if request.context_id:
            params["contextId"] = request.context_id
        if isinstance(request.status, TaskState) and request.status is not TaskState.UNSPECIFIED:
            params["status"] = request.status.value
        if request.page_size is not UNSET:
            params["pageSize"] = str(request.page_size)
        if request.page_token:
            params["pageToken"] = request.page_token
        if request.history_length is not UNSET:
            params["historyLength"] = str(request.history_length)
        if request.status_timestamp_after is not UNSET:
            params["statusTimestampAfter"] = request.status_timestamp_after
        if request.include_artifacts is not UNSET:
            params["includeArtifacts"] = _bool(request.include_artifacts)
        url = self._url(request.tenant, "/tasks")
        return _decode(await self._do("GET", url, meta, params=params), ListTasksResponse)

    async def cancel_task(self, request: CancelTaskRequest, meta: CallMeta) -> Task:
        url = self._url(request.tenant, f"/tasks/{_seg(request.id)}:cancel")
        return _decode(await self._do("POST", url, meta, body=_without_tenant(request)), Task)

    def subscribe_to_task(
        self, request: SubscribeToTaskRequest, meta: CallMeta, last_event_id: str = ""
    ) -> AsyncIterator[StreamItem]:
        url = self._url(request.tenant, f"/tasks/{_seg(request.id)}:subscribe")
        return self._stream(url, meta, None, last_event_id)

    def _configs_url(self, tenant: str, task_id: str, config_id: str | None = None) -> str:
        path = f"/tasks/{_seg(task_id)}/pushNotificationConfigs"
        if config_id is not None:
            path += f"/{_seg(config_id)}"
        return self._url(tenant, path)

    async def create_push_config(
        self, request: TaskPushNotificationConfig, meta: CallMeta
    ) -> TaskPushNotificationConfig:
        url = self._configs_url(request.tenant, request.task_id)
        content = await self._do("POST", url, meta, body=_without_tenant(request))
        return _decode(content, TaskPushNotificationConfig)

    async def get_push_config(
        self, request: GetTaskPushNotificationConfigRequest, meta: CallMeta
    ) -> TaskPushNotificationConfig:
        url = self._configs_url(request.tenant, request.task_id, request.id)
        return _decode(await self._do("GET", url, meta), TaskPushNotificationConfig)

    async def list_push_configs(
        self, request: ListTaskPushNotificationConfigsRequest, meta: CallMeta
    ) -> ListTaskPushNotificationConfigsResponse:
        params: dict[str, str] = {}
        if request.page_size:
            params["pageSize"] = str(request.page_size)
        if request.page_token:
            params["pageToken"] = request.page_token
        url = self._configs_url(request.tenant, request.task_id)
        content = await self._do("GET", url, meta, params=params)
        return _decode(content, ListTaskPushNotificationConfigsResponse)

    async def delete_push_config(
        self, request: DeleteTaskPushNotificationConfigRequest, meta: CallMeta
    ) -> None:
        await self._do(
            "DELETE", self._configs_url(request.tenant, request.task_id, request.id), meta
        )

    async def get_extended_card(
        self, request: GetExtendedAgentCardRequest, meta: CallMeta
    ) -> AgentCard:
        url = self._url(request.tenant, "/extendedAgentCard")
        return _decode(await self._do("GET", url, meta), AgentCard)


def _not_sse(answer: HttpAnswer) -> ClientError:
    error = _error(answer)
    if 200 <= answer.status < 300 and not isinstance(error, A2AClientError):
        return InvalidResponseError(
            f"expected an event stream, got {answer.content_type or 'no content type'}"
        )
    return error
