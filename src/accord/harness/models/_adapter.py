"""What every provider's adapter shares: retrying a model call while nothing of its answer
has come, and reading the tool calls the model wrote.

A call is made again only before the first event of its answer reached the harness (a
refused connection, a 429, a 5xx or an overloaded server before the stream starts, or an
error the stream sends before any of the answer): once an event is out, its tokens may already
be on clients' streams, and asking again would write a second answer after the first. Between
attempts the wait is the provider's ``Retry-After`` when it names one — up to a bound, past
which the call fails at once, saying how long it asked — else a jittered exponential backoff.

An adapter says what an error of its package means (:class:`Failure`); :func:`retried` turns
the last one into a :class:`ModelError` naming the model and the kind of failure.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import socket
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, aclosing
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from accord.errors import AccordError
from accord.harness._transcript import ToolCall
from accord.harness.models._base import ModelError, ModelEvent, ModelFailure, ModelResponse
from accord.harness.models._http import BrokenAnswer, ConnectFailed, RefusedAnswer, TimedOut
from accord.harness.models._sse import MAX_LINE, SSEError, SSEReader
from accord.harness.models._sse import Event as SSEEvent

log = logging.getLogger("accord.harness.model")

HTTP_CLIENTS = ("httpx", "httpx2", "httpcore")
# What providers say of a prompt longer than the model's context window
TOO_LONG = (
    "prompt is too long",
    "exceed context limit",
    "context window",
    "context length",
    "too many tokens",
    "maximum context",
)

Event = TypeVar("Event")
# What is read of a stream after its answer (so that the connection can be used again)
DRAIN_S = 0.25
DRAIN_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Retry:
    attempts: int = 3  # calls in all, while nothing of the answer has come
    base_s: float = 0.5
    max_s: float = 8.0
    max_wait_s: float = 60.0  # the longest Retry-After honoured; a longer one fails the call

    def delay(self, attempt: int) -> float:
        """The backoff before the attempt after ``attempt`` (from 0), jittered."""
        backoff: float = min(self.max_s, self.base_s * 2.0**attempt)
        return backoff * (0.5 + random.random() / 2)

    def wait(self, attempt: int, asked_s: float | None) -> float | None:
        """The wait before the attempt after ``attempt``: what the provider asked, if it did
        and within the bound (None: it asked for more), else the backoff."""
        if asked_s is None:
            return self.delay(attempt)
        return max(0.0, asked_s) if asked_s <= self.max_wait_s else None


@dataclass(frozen=True, slots=True)
class Failure:
    """What an error of a provider's package means: the kind, one line saying it, whether
    asking again may help, and the wait the provider asked for."""

    reason: ModelFailure
    says: str
    retryable: bool = False
    retry_after_s: float | None = None


async def retried(
    call: Callable[[], AsyncGenerator[Event]],
    *,
    model: str,
    retry: Retry,
    read: Callable[[Exception], Failure | None],
) -> AsyncIterator[Event]:
    """``call()``'s events, the call made again (up to ``retry.attempts`` in all) while it
    failed before its first event. ``read`` says what an error means (None: not a model
    failure, raised as it is); ``model`` is the model as the settings name it."""
    started = False
    for attempt in range(retry.attempts):
        try:
            async with aclosing(call()) as events:
                async for event in events:
                    started = True
                    yield event
            return
        except ModelError:
            raise
        except Exception as exc:
            failure = read(exc)
            if failure is None:
                raise
            says, wait = failure.says, None
            if started:
                says += " (after the answer had begun: not asked again)"
            elif failure.retryable and attempt + 1 < retry.attempts:
                wait = retry.wait(attempt, failure.retry_after_s)
                if wait is None:
                    says += (
                        f" (it asked to wait {failure.retry_after_s:g} s, more than the "
                        f"{retry.max_wait_s:g} s accord waits)"
                    )
            elif failure.retryable and attempt:
                says += f", after {attempt + 1} attempts"
            if wait is None:
                raise ModelError(
                    f"model {model}: {says}",
                    reason=failure.reason,
                    model=model,
                    retry_after_s=failure.retry_after_s,
                    detail=says,
                ) from exc
            log.info("model %s: %s; trying again in %.1f s", model, failure.says, wait)
            await asyncio.sleep(wait)


async def whole(events: AsyncIterator[ModelEvent]) -> ModelResponse:
    """The response a model's stream of events ends with."""
    final: ModelResponse | None = None
    async for event in events:
        if isinstance(event, ModelResponse):
            final = event
    assert final is not None, "a model stream ends with its response"
    return final


def unreachable(error: BaseException) -> str:
    """Why a connection to the endpoint failed, in a few words: "connection refused", a
    name that does not resolve, or what the HTTP client said."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        if isinstance(seen, socket.gaierror):
            return f"the host's name does not resolve: {seen}"
        if isinstance(seen, TimeoutError):
            return "the connection timed out"
        seen = seen.__cause__ or seen.__context__
    cause = error.__cause__ or error
    said = str(cause)
    if "refused" in said.lower() or "all connection attempts failed" in said.lower():
        return "connection refused"
    return f"cannot connect: {said or type(cause).__name__}"


def broken(error: Exception) -> Failure | None:
    """A stream that broke, where a provider's package lets its HTTP client's error
    through; None for any other error."""
    if type(error).__module__.partition(".")[0] in HTTP_CLIENTS:
        if type(error).__name__.endswith("Timeout"):  # (httpx's ReadTimeout and kin)
            return Failure(
                "model_unavailable", "the stream stalled: nothing came within the timeout", True
            )
        return Failure("model_unavailable", f"the stream broke ({error!r})", True)
    return None


def transport_failure(error: Exception) -> Failure | None:
    """What an error of accord's HTTP client means, but an error status (which each
    provider reads its own way); None for any other error."""
    if isinstance(error, ConnectFailed):
        return Failure("model_unavailable", unreachable(error), True)
    if isinstance(error, TimedOut):
        if error.stalled:
            return Failure(
                "model_unavailable", "the stream stalled: nothing came within the timeout", True
            )
        return Failure("model_unavailable", "the endpoint did not answer in time", True)
    if isinstance(error, BrokenAnswer):
        return Failure("model_unavailable", f"the stream broke ({error})", True)
    if isinstance(error, RefusedAnswer):
        return Failure("model_error", f"the endpoint's answer was refused: {error}")
    return None


def client_failure(
    error: Exception,
    package: str,
    base: str,
    status: Callable[[Any], Failure],
    *also: type[Exception],
) -> Failure | None:
    """What an error of either client means, but an error status of accord's (which each
    provider reads its own way first): accord's client's transport errors
    (:func:`transport_failure`), else the errors of the provider's ``package`` — its timeout,
    its unreachable endpoint, its error statuses (read by ``status``), its ``base`` error
    class and ``also`` (refused requests). Never imports the package: none of its errors
    can come unless it was imported. None: an error of neither."""
    known = transport_failure(error)
    if known is not None:
        return known
    module: Any = sys.modules.get(package)
    if module is None:
        return broken(error)
    if isinstance(error, module.APITimeoutError):
        return Failure("model_unavailable", "the endpoint did not answer in time", True)
    if isinstance(error, module.APIConnectionError):
        return Failure("model_unavailable", unreachable(error), True)
    if isinstance(error, module.APIStatusError):
        return status(error)
    if isinstance(error, (getattr(module, base), *also)):
        return Failure("model_error", str(error) or type(error).__name__)
    return broken(error)


def tool_call(call_id: str, name: str, arguments: str) -> ToolCall:
    """A tool call as the model wrote it; arguments that are not a JSON object are kept for
    the tool to refuse (``{"_raw": …}``), not a failed turn."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        parsed = {"_raw": arguments}
    return ToolCall(name=name, arguments=parsed, id=call_id)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait an HTTP answer asks for, in seconds: ``retry-after-ms``, else ``Retry-After``
    (seconds, or an HTTP date); None if it asks none (or says it unreadably)."""
    try:
        if "retry-after-ms" in headers:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        asked = headers.get("retry-after")
        if asked is None:
            return None
        try:
            return max(0.0, float(asked))
        except ValueError:
            when = email.utils.parsedate_to_datetime(asked)
            return max(0.0, (when - datetime.now(UTC)).total_seconds())
    except (ValueError, TypeError):
        return None


async def read_response(
    call: Callable[[], AbstractAsyncContextManager[Any]],
    events: Callable[[AsyncIterator[bytes]], AsyncGenerator[Event]],
) -> AsyncGenerator[Event]:
    """The events of a call, its stream read by ``events``: ``call`` opens the answer, through
    accord's HTTP client or a provider's package (which sends our body as it is, in
    ``extra_body`` over the few parameters its signature requires, so it walks none of the
    conversation). Either hands back the HTTP response unread; its errors (connection,
    timeout, an HTTP status) are raised before any event.
    After the answer, what is left of the body (its end, after ``[DONE]`` or
    ``message_stop``) is read within a bound, so that the connection serves the next call."""
    async with call() as response:
        received = response.iter_bytes()
        async with aclosing(events(received)) as read:
            async for event in read:
                yield event
        try:
            async with asyncio.timeout(DRAIN_S):
                left = DRAIN_BYTES
                async for data in received:
                    left -= len(data)
                    if left < 0:
                        break
        except Exception as exc:  # (the answer is whole: a failing end costs the connection)
            log.debug("the end of a model stream was not read: %r", exc)


# --- a provider's stream, read by accord: its bounds and its SSE events -----------------

MAX_TOOL_CALLS = 64
MAX_ARGUMENTS = 1024 * 1024  # characters of one call's arguments
MAX_NAME = 1024  # characters of a tool's name, and of a call's id
MAX_TEXT = 16 * 1024 * 1024  # characters of the answer's text


class Failed(AccordError):
    """A model call failed on its stream: what the endpoint sent said so, or broke a bound."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.says)
        self.failure = failure


def refused(says: str) -> Failed:
    """A stream accord will not read on (not asked again: the endpoint would send it again)."""
    return Failed(Failure("model_error", f"the endpoint's stream was refused: {says}"))


async def read_events(received: AsyncIterator[bytes]) -> AsyncGenerator[list[SSEEvent]]:
    """The SSE events of ``received``, a read's worth at a time: past the reader's bounds, a
    refused stream; one that ends inside an event, a broken one."""
    reader = SSEReader(MAX_LINE)
    async for data in received:
        try:
            events = reader.feed(data)
        except SSEError as exc:
            raise refused(str(exc)) from None
        if events:
            yield events
    try:
        events = reader.end()
    except SSEError as exc:
        raise Failed(Failure("model_unavailable", f"the stream broke: {exc}", True)) from None
    yield events
