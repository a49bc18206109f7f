"""The A2A client: every operation of the protocol over whichever binding the agent offers."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Mapping,
    Sequence,
)
from contextlib import aclosing
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import msgspec

from accord.client import _builtin
from accord.client._card import (
    PROTOCOL_VERSION,
    check_signature,
    fetch_served_card,
    select_interface,
    verified,
)
from accord.client._credentials import CredentialsProvider
from accord.client._errors import (
    A2AClientError,
    ClientError,
    ConnectionFailedError,
    NoCompatibleInterfaceError,
    RequestTimeoutError,
    StreamBrokenError,
    TaskNotFoundError,
    TransportError,
    UnexpectedStatusError,
    UnsupportedOperationError,
)
from accord.client._options import CallOptions, ResumePolicy, RetryPolicy, Timeouts
from accord.client._resume import StreamTracker
from accord.client._transport import (
    CallMeta,
    StreamItem,
    Transport,
    TransportContext,
    registered_bindings,
    transport_factory,
)
from accord.client._urls import check_agent_url
from accord.telemetry import _tracing as tracing
from accord.wire import (
    UNSET,
    AgentCard,
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    ErrorKind,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

if TYPE_CHECKING:
    from accord.signing import CardCheck

_builtin.register()

MessageInput = str | Message | SendMessageRequest
R = TypeVar("R")
IDEMPOTENCY_KEY = "Idempotency-Key"


def text_message(text: str, *, context_id: str = "", task_id: str = "") -> Message:
    """A user message with one text part and a fresh message id."""
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.USER,
        parts=[Part(text=text)],
        context_id=context_id,
        task_id=task_id,
    )


def _rate_limited(exc: BaseException) -> bool:
    """The server refused the call for now, before carrying it out, and said when to come
    back: a rate limit (ResourceExhausted or HTTP 429 with ``Retry-After`` / ``RetryInfo``;
    a limit without one, such as tasks per tenant, is no reason to send it again)."""
    if isinstance(exc, A2AClientError):
        return exc.kind is ErrorKind.RESOURCE_EXHAUSTED and exc.retry_after is not None
    if isinstance(exc, UnexpectedStatusError):
        return exc.status_code == 429 and exc.retry_after is not None
    return False


def _retryable(exc: ClientError) -> bool:
    """A stream worth resuming after ``exc``: it broke, or the server cannot answer now (or
    not yet: a rate limit)."""
    if isinstance(exc, A2AClientError):
        return exc.kind is ErrorKind.UNAVAILABLE or _rate_limited(exc)
    if isinstance(exc, UnexpectedStatusError):
        return exc.status_code >= 500 or _rate_limited(exc)
    return isinstance(exc, ConnectionFailedError | RequestTimeoutError | StreamBrokenError)


def _worth_sending_again(exc: BaseException) -> bool:
    """No answer came: the connection failed or dropped, or a proxy said 502 or 503; or the
    server cannot answer now (UnavailableError: its store cannot read or write), or not yet
    (a rate limit that says when: the call was refused before anything was done)."""
    if _rate_limited(exc):
        return True
    if isinstance(exc, UnexpectedStatusError):
        return exc.status_code in (502, 503)
    if isinstance(exc, A2AClientError) and exc.kind is ErrorKind.UNAVAILABLE:
        return True
    code = getattr(exc, "code", None)  # an A2A error body with a gateway's status
    if code in (502, 503, "UNAVAILABLE"):
        return True
    return isinstance(exc, ConnectionFailedError)


def _unavailable(exc: BaseException) -> bool:
    return isinstance(exc, A2AClientError) and exc.kind is ErrorKind.UNAVAILABLE


class Client:
    """An async A2A client bound to one interface of one agent.

    Build it from a card (``Client(card)``) or from the agent's URL
    (``await Client.connect(url)``, or ``async with Client.connect(url) as client``). It picks
    the first interface in the card's order that it has a transport for, unless ``binding``
    forces one (``"JSONRPC"``, ``"HTTP+JSON"``, ``"GRPC"``).

    Every request carries ``A2A-Version: 1.0``, the interface's tenant, the extensions asked
    for (``A2A-Extensions``) and the credentials provider's headers. One ``httpx.AsyncClient``
    is reused for every call (pass your own with ``http_client``; it is then not closed here).

    ``card_check`` says whether the card's signatures hold (A2A §8.4). With
    ``verify_card=True`` a card whose signature does not hold, or that has none, is refused
    (:class:`~accord.client._errors.CardSignatureError`); ``card_keys`` is the JWKS to trust
    for it (default: the keys the card publishes in accord's contract extension).
    """

    def __init__(
        self,
        card: AgentCard,
        *,
        binding: str | None = None,
        credentials: CredentialsProvider | None = None,
        extensions: Sequence[str] = (),
        headers: Mapping[str, str] | None = None,
        timeouts: Timeouts | None = None,
        resume: ResumePolicy | None = None,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
        verify_card: bool = False,
        card_keys: Mapping[str, Any] | None = None,
        served_card: bytes | None = None,
    ) -> None:
        self.card = card
        self._card_keys = card_keys
        self._served_card = served_card
        self._card_check: CardCheck | None = None
        if verify_card:
            verified(card, self.card_check)
        self.interface = select_interface(card, registered_bindings(), binding)
        factory = transport_factory(self.interface.protocol_binding)
        if factory is None:  # pragma: no cover - select_interface only returns registered ones
            raise NoCompatibleInterfaceError(self.interface.protocol_binding)
        self._credentials = credentials
        self._extensions = list(dict.fromkeys(extensions))
        self._headers = dict(headers or {})
        self._timeouts = timeouts or Timeouts()
        self._resume = resume or ResumePolicy()
        self._retry = retry or RetryPolicy()
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(follow_redirects=True)
        self._transport: Transport = factory(
            TransportContext(self.interface, self._http, self._timeouts)
        )

    # --- construction and lifetime ------------------------------------------------------------

    @classmethod
    async def from_url(
        cls,
        url: str,
        *,
        http_client: httpx.AsyncClient | None = None,
        credentials: CredentialsProvider | None = None,
        headers: Mapping[str, str] | None = None,
        timeouts: Timeouts | None = None,
        **kwargs: Any,
    ) -> Client:
        """Fetch the agent card at ``url`` (base URL or card URL), then build the client.

        ``headers`` go with the card request too; credentials do not (they belong to an
        interface, which is only known once the card is read).
        """
        url = check_agent_url(url)
        http = http_client or httpx.AsyncClient(follow_redirects=True)
        try:
            card, served = await fetch_served_card(
                http, url, headers=headers, timeouts=timeouts or Timeouts()
            )
            client = cls(
                card,
                http_client=http,
                credentials=credentials,
                headers=headers,
                timeouts=timeouts,
                served_card=served,
                **kwargs,
            )
        except BaseException:
            if http_client is None:
                await http.aclose()
            raise
        client._owns_http = http_client is None
        return client

    @classmethod
    def connect(cls, source: str | AgentCard, **kwargs: Any) -> _Connecting:
        """``await Client.connect(url_or_card)`` or ``async with Client.connect(...) as c``."""
        return _Connecting(cls, source, kwargs)

    @property
    def binding(self) -> str:
        return self.interface.protocol_binding

    @property
    def card_check(self) -> CardCheck:
        """Whether the card's signatures hold (A2A §8.4): ``status`` is ``unsigned``,
        ``valid`` (``kid`` the key) or ``invalid`` (``reason``). Checked against
        ``card_keys`` (a JWKS you trust), else the keys the card itself publishes."""
        if self._card_check is None:
            self._card_check = check_signature(self.card, self._served_card, self._card_keys)
        return self._card_check

    async def aclose(self) -> None:
        await self._transport.aclose()
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # --- per-call plumbing ----------------------------------------------------------------

    async def _meta(self, options: CallOptions | None, *, streaming: bool = False) -> CallMeta:
        headers = {"A2A-Version": PROTOCOL_VERSION, **self._headers}
        if self._credentials is not None:
            headers.update(await self._credentials.headers(self.card, self.interface))
        extensions = self._extensions
        if options is not None and options.extensions:
            extensions = list(dict.fromkeys([*extensions, *options.extensions]))
        if extensions:
            headers["A2A-Extensions"] = ",".join(extensions)
        timeout = self._timeouts.stream_idle if streaming else self._timeouts.request
        if options is not None:
            headers.update(options.headers)
            if options.timeout is not None:
                timeout = options.timeout
        tracing.inject(headers)  # the caller's trace goes on (traceparent), when there is one
        return CallMeta(headers=headers, timeout=timeout)

    async def _call(
        self,
        operation: Callable[[CallMeta], Awaitable[R]],
        options: CallOptions | None,
        *,
        keyed: bool = False,
    ) -> R:
        """``operation`` sent again (the same request, the same headers) while it fails
        without an answer, as the retry policy allows. ``keyed``: a change that carries an
        Idempotency-Key, the same for every attempt, so the server carries it out once."""
        meta = await self._meta(options)
        if keyed and not any(name.lower() == "idempotency-key" for name in meta.headers):
            meta.headers[IDEMPOTENCY_KEY] = str(uuid.uuid4())
        attempt = 0
        while True:
            try:
                return await operation(meta)
            except ClientError as exc:
                attempt += 1
                wait = self._retry.wait(attempt, exc.retry_after)
                if wait is None or not _worth_sending_again(exc):
                    raise
            await asyncio.sleep(wait)

    @property
    def tenant(self) -> str:
        return self.interface.tenant

    def _send_request(
        self,
        message: MessageInput,
        *,
        context_id: str,
        task_id: str,
        configuration: SendMessageConfiguration | None,
        return_immediately: bool | None,
        history_length: int | None,
        accepted_output_modes: Sequence[str] | None,
        metadata: Mapping[str, Any] | None,
    ) -> SendMessageRequest:
        if isinstance(message, SendMessageRequest):
            request = message
        else:
            if isinstance(message, str):
                message = text_message(message, context_id=context_id, task_id=task_id)
            else:
                changes: dict[str, Any] = {}
                if context_id:
                    changes["context_id"] = context_id
                if task_id:
                    changes["task_id"] = task_id
                if changes:
                    message = msgspec.structs.replace(message, **changes)
            request = SendMessageRequest(message=message)
        config = configuration
        if config is None and isinstance(request.configuration, SendMessageConfiguration):
            config = request.configuration
        changes = {}
        if return_immediately is not None:
            changes["return_immediately"] = return_immediately
        if history_length is not None:
            changes["history_length"] = history_length
        if accepted_output_modes is not None:
            changes["accepted_output_modes"] = list(accepted_output_modes)
        if changes:
            config = msgspec.structs.replace(config or SendMessageConfiguration(), **changes)
        updates: dict[str, Any] = {}
        if config is not None:
            updates["configuration"] = config
        if metadata is not None:
            updates["metadata"] = dict(metadata)
        if not request.tenant and self.tenant:
            updates["tenant"] = self.tenant
        return msgspec.structs.replace(request, **updates) if updates else request

    # --- operations -----------------------------------------------------------------------

    async def send(
        self,
        message: MessageInput,
        *,
        context_id: str = "",
        task_id: str = "",
        configuration: SendMessageConfiguration | None = None,
        return_immediately: bool | None = None,
        history_length: int | None = None,
        accepted_output_modes: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        options: CallOptions | None = None,
    ) -> Task | Message:
        """SendMessage: the Task (when the agent made one) or the agent's Message.

        ``message`` is text (sent as one text part), a ``Message`` or a full request.
        """
        request = self._send_request(
            message,
            context_id=context_id,
            task_id=task_id,
            configuration=configuration,
            return_immediately=return_immediately,
            history_length=history_length,
            accepted_output_modes=accepted_output_modes,
            metadata=metadata,
        )
        # Sent again after a failure without an answer: the same messageId, carried out once.
        response = await self._call(
            lambda meta: self._transport.send_message(request, meta), options
        )
        if isinstance(response.task, Task):
            return response.task
        assert isinstance(response.message, Message)  # the oneof guarantees one of the two
        return response.message

    async def stream(
        self,
        message: MessageInput,
        *,
        context_id: str = "",
        task_id: str = "",
        configuration: SendMessageConfiguration | None = None,
        history_length: int | None = None,
        accepted_output_modes: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        options: CallOptions | None = None,
    ) -> AsyncGenerator[StreamResponse, None]:
        """SendStreamingMessage: the events as they come, resumed if the stream breaks.

        Ends when the server closes the stream (at a terminal or interrupted state, or after
        a message answer); each event is yielded once, in order, even across reconnections.
        """
        request = self._send_request(
            message,
            context_id=context_id,
            task_id=task_id,
            configuration=configuration,
            return_immediately=None,
            history_length=history_length,
            accepted_output_modes=accepted_output_modes,
            metadata=metadata,
        )
        meta = await self._meta(options, streaming=True)
        events = self._transport.send_streaming_message(request, meta)
        # Before its first event the stream is sent again (the same messageId: the server
        # follows the first one's turn); after, it is resumed (below).
        followed_events = self._follow(
            events,
            options,
            request.tenant,
            turn=True,
            resend=lambda: self._transport.send_streaming_message(request, meta),
        )
        # Closing this generator closes the connection now, not when the collector finds it.
        async with aclosing(followed_events) as followed:
            async for event in followed:
                yield event

    async def subscribe(
        self, task_id: str, *, options: CallOptions | None = None
    ) -> AsyncGenerator[StreamResponse, None]:
        """SubscribeToTask: the task's current state, then its events, resumed if broken."""
        meta = await self._meta(options, streaming=True)
        request = SubscribeToTaskRequest(id=task_id, tenant=self.tenant)
        events = self._transport.subscribe_to_task(request, meta)
        # Closing this generator closes the connection now, not when the collector finds it.
        async with aclosing(self._follow(events, options, request.tenant)) as followed:
            async for event in followed:
                yield event

    async def get_task(
        self,
        task_id: str,
        *,
        history_length: int | None = None,
        current_generation: int | None = None,
        options: CallOptions | None = None,
    ) -> Task:
        """GetTask. ``current_generation`` (A2A 1.1 preview): a server that has the preview
        answers once the task's generation is past it (long-polling), or after its own
        timeout; others answer at once."""
        request = GetTaskRequest(
            id=task_id,
            tenant=self.tenant,
            history_length=UNSET if history_length is None else history_length,
            current_generation=UNSET if current_generation is None else current_generation,
        )
        return await self._call(lambda meta: self._transport.get_task(request, meta), options)

    async def list_tasks_page(
        self,
        *,
        context_id: str = "",
        status: TaskState | None = None,
        page_size: int | None = None,
        page_token: str = "",
        history_length: int | None = None,
        status_timestamp_after: str | None = None,
        include_artifacts: bool | None = None,
        options: CallOptions | None = None,
    ) -> ListTasksResponse:
        """ListTasks, one page: ``next_page_token`` is "" on the last one."""
        request = ListTasksRequest(
            tenant=self.tenant,
            context_id=context_id,
            status=status or TaskState.UNSPECIFIED,
            page_size=UNSET if page_size is None else page_size,
            page_token=page_token,
            history_length=UNSET if history_length is None else history_length,
            status_timestamp_after=(
                UNSET if status_timestamp_after is None else status_timestamp_after
            ),
            include_artifacts=UNSET if include_artifacts is None else include_artifacts,
        )
        return await self._call(lambda meta: self._transport.list_tasks(request, meta), options)

    async def list_tasks(
        self,
        *,
        context_id: str = "",
        status: TaskState | None = None,
        page_size: int | None = None,
        history_length: int | None = None,
        status_timestamp_after: str | None = None,
        include_artifacts: bool | None = None,
        options: CallOptions | None = None,
    ) -> AsyncIterator[Task]:
        """Every matching task, fetching page after page as the caller iterates."""
        token = ""
        seen_tokens: set[str] = set()
        while True:
            page = await self.list_tasks_page(
                context_id=context_id,
                status=status,
                page_size=page_size,
                page_token=token,
                history_length=history_length,
                status_timestamp_after=status_timestamp_after,
                include_artifacts=include_artifacts,
                options=options,
            )
            for task in page.tasks:
                yield task
            token = page.next_page_token
            if not token or token in seen_tokens:  # a repeated token would loop forever
                return
            seen_tokens.add(token)

    async def cancel(
        self,
        task_id: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        options: CallOptions | None = None,
    ) -> Task:
        request = CancelTaskRequest(
            id=task_id,
            tenant=self.tenant,
            metadata=UNSET if metadata is None else dict(metadata),
        )
        return await self._call(
            lambda meta: self._transport.cancel_task(request, meta), options, keyed=True
        )

    async def create_push_config(
        self,
        task_id: str,
        url: str,
        *,
        config_id: str = "",
        token: str = "",
        authentication: AuthenticationInfo | None = None,
        options: CallOptions | None = None,
    ) -> TaskPushNotificationConfig:
        """CreateTaskPushNotificationConfig; the answer carries the id the server assigned."""
        request = TaskPushNotificationConfig(
            url=url,
            tenant=self.tenant,
            id=config_id,
            task_id=task_id,
            token=token,
            authentication=UNSET if authentication is None else authentication,
        )
        return await self._call(
            lambda meta: self._transport.create_push_config(request, meta), options, keyed=True
        )

    async def get_push_config(
        self, task_id: str, config_id: str, *, options: CallOptions | None = None
    ) -> TaskPushNotificationConfig:
        request = GetTaskPushNotificationConfigRequest(
            task_id=task_id, id=config_id, tenant=self.tenant
        )
        return await self._call(
            lambda meta: self._transport.get_push_config(request, meta), options
        )

    async def list_push_configs(
        self, task_id: str, *, page_size: int = 0, options: CallOptions | None = None
    ) -> list[TaskPushNotificationConfig]:
        """Every push config of the task (all pages)."""
        configs: list[TaskPushNotificationConfig] = []
        token = ""
        seen_tokens: set[str] = set()
        while True:
            request = ListTaskPushNotificationConfigsRequest(
                task_id=task_id, tenant=self.tenant, page_size=page_size, page_token=token
            )
            page = await self._call(partial(self._transport.list_push_configs, request), options)
            configs.extend(page.configs)
            token = page.next_page_token
            if not token or token in seen_tokens:
                return configs
            seen_tokens.add(token)

    async def delete_push_config(
        self, task_id: str, config_id: str, *, options: CallOptions | None = None
    ) -> None:
        request = DeleteTaskPushNotificationConfigRequest(
            task_id=task_id, id=config_id, tenant=self.tenant
        )
        await self._call(
            lambda meta: self._transport.delete_push_config(request, meta), options, keyed=True
        )

    async def get_extended_card(self, *, options: CallOptions | None = None) -> AgentCard:
        """GetExtendedAgentCard: the card as an authenticated caller sees it."""
        request = GetExtendedAgentCardRequest(tenant=self.tenant)
        return await self._call(
            lambda meta: self._transport.get_extended_card(request, meta), options
        )

    # --- resumable streams ----------------------------------------------------------------

    async def _follow(
        self,
        events: AsyncIterator[StreamItem],
        options: CallOptions | None,
        tenant: str,
        *,
        turn: bool = False,
        resend: Callable[[], AsyncIterator[StreamItem]] | None = None,
    ) -> AsyncGenerator[StreamResponse, None]:
        """Yield each event once; on a break, resume (Last-Event-ID) or resubscribe.

        With ``turn`` (SendStreamingMessage) the stream ends with the turn even when it was
        resumed over SubscribeToTask, which would follow the task past an interrupted state.
        Headers are computed again for each reconnection, so refreshed credentials are used.
        """
        tracker = StreamTracker()
        policy = self._resume
        attempt = 0
        last_id = ""
        retry_ms: int | None = None
        reconnected = False
        sent = 0  # attempts to send the request again before its first event
        while True:
            got_any = False
            try:
                try:
                    async for item in events:
                        got_any = True
                        if item.event_id:
                            last_id = item.event_id
                        if item.retry_ms is not None:
                            retry_ms = item.retry_ms
                        for response in tracker.accept(item.response):
                            attempt = 0
                            yield response
                        if tracker.done or (turn and tracker.turn_ended):
                            return
                finally:
                    await _close(events)
                if tracker.done or tracker.interrupted or not tracker.task_id:
                    return  # the server ended the stream where it may
                failure: ClientError = StreamBrokenError(
                    "the stream ended before the task reached a final state"
                )
            except (UnsupportedOperationError, TaskNotFoundError):
                # Resubscribing to a task that finished while we were away is refused: read it.
                if not reconnected or got_any:
                    raise
                task = await self._transport.get_task(
                    GetTaskRequest(id=tracker.task_id, tenant=tenant), await self._meta(options)
                )
                for response in tracker.accept(StreamResponse(task=task)):
                    yield response
                return
            except (TransportError, A2AClientError) as exc:
                if (
                    isinstance(exc, A2AClientError)
                    and not _unavailable(exc)
                    and not _rate_limited(exc)
                ):
                    raise
                if not tracker.task_id and resend is not None and not got_any:
                    sent += 1
                    wait = self._retry.wait(sent, exc.retry_after)
                    if wait is None or not _worth_sending_again(exc):
                        raise
                    await asyncio.sleep(wait)
                    events = resend()
                    continue
                if not tracker.task_id or not _retryable(exc):
                    raise
                failure = exc
                server_wait = exc.retry_after
            else:
                server_wait = None
            attempt += 1
            if attempt > policy.max_attempts or (server_wait or 0.0) > self._retry.max_retry_after:
                raise failure
            await asyncio.sleep(max(policy.delay(attempt, retry_ms), server_wait or 0.0))
            tracker.reconnecting(resumed_by_id=bool(last_id))
            reconnected = True
            request = SubscribeToTaskRequest(id=tracker.task_id, tenant=tenant)
            meta = await self._meta(options, streaming=True)
            events = self._transport.subscribe_to_task(request, meta, last_id)


async def _close(events: AsyncIterator[StreamItem]) -> None:
    aclose: Callable[[], Any] | None = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()


class _Connecting:
    """What :meth:`Client.connect` returns: awaitable, and an async context manager."""

    def __init__(self, cls: type[Client], source: str | AgentCard, kwargs: dict[str, Any]) -> None:
        self._cls = cls
        self._source = source
        self._kwargs = kwargs
        self._client: Client | None = None

    async def _make(self) -> Client:
        if isinstance(self._source, AgentCard):
            return self._cls(self._source, **self._kwargs)
        return await self._cls.from_url(self._source, **self._kwargs)

    def __await__(self) -> Generator[Any, None, Client]:
        return self._make().__await__()

    async def __aenter__(self) -> Client:
        self._client = await self._make()
        return self._client

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._client is not None:
            await self._client.aclose()
