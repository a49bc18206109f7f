"""A blocking facade over :class:`~accord.client.Client`, for scripts and notebooks.

An event loop runs in a background thread (an anyio blocking portal); each method submits the
async call to it and waits. Iterators are pulled one event at a time, so a long stream is
consumed as it arrives and breaking out of the loop closes it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from functools import partial
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from accord.client._client import Client
from accord.wire import AgentCard

P = ParamSpec("P")
R = TypeVar("R")


def _blocking(
    method: Callable[Concatenate[Client, P], Awaitable[R]],
) -> Callable[Concatenate[SyncClient, P], R]:
    def call(self: SyncClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        async def run() -> R:
            return await method(self._client, *args, **kwargs)

        return self._portal.call(run)

    call.__doc__ = method.__doc__
    call.__name__ = method.__name__
    return call


def _blocking_iter(
    method: Callable[Concatenate[Client, P], AsyncIterator[R]],
) -> Callable[Concatenate[SyncClient, P], Iterator[R]]:
    def call(self: SyncClient, /, *args: P.args, **kwargs: P.kwargs) -> Iterator[R]:
        return self._iterate(method(self._client, *args, **kwargs))

    call.__doc__ = method.__doc__
    call.__name__ = method.__name__
    return call


class SyncClient:
    """``SyncClient(url_or_card, **client_options)``; the same operations as ``Client``."""

    def __init__(self, source: str | AgentCard, **kwargs: Any) -> None:
        self._portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        try:
            self._client: Client = self._portal.call(partial(self._connect, source, kwargs))
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            raise

    @staticmethod
    async def _connect(source: str | AgentCard, kwargs: dict[str, Any]) -> Client:
        return await Client.connect(source, **kwargs)

    @property
    def client(self) -> Client:
        """The async client underneath (its methods must run on the portal's loop)."""
        return self._client

    @property
    def card(self) -> AgentCard:
        return self._client.card

    @property
    def binding(self) -> str:
        return self._client.binding

    def _iterate(self, events: AsyncIterator[R]) -> Iterator[R]:
        async def next_event() -> tuple[bool, R | None]:
            try:
                return True, await events.__anext__()
            except StopAsyncIteration:
                return False, None

        async def close() -> None:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()

        try:
            while True:
                more, event = self._portal.call(next_event)
                if not more:
                    return
                yield event  # type: ignore[misc]
        finally:
            self._portal.call(close)

    send = _blocking(Client.send)
    stream = _blocking_iter(Client.stream)
    subscribe = _blocking_iter(Client.subscribe)
    get_task = _blocking(Client.get_task)
    list_tasks_page = _blocking(Client.list_tasks_page)
    list_tasks = _blocking_iter(Client.list_tasks)
    cancel = _blocking(Client.cancel)
    create_push_config = _blocking(Client.create_push_config)
    get_push_config = _blocking(Client.get_push_config)
    list_push_configs = _blocking(Client.list_push_configs)
    delete_push_config = _blocking(Client.delete_push_config)
    get_extended_card = _blocking(Client.get_extended_card)

    def close(self) -> None:
        try:
            self._portal.call(self._client.aclose)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
