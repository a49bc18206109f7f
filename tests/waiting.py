"""Waiting in tests for something to happen: poll its condition until a deadline.

A test that waits never sleeps for a guessed time: it asks, again and again, whether what it
waits for has happened (a state reached, a line logged, a delivery made), and goes on the
moment it has. The deadline only bounds a failure, so it is generous: a loaded machine makes
the wait longer, never the test red.

``eventually`` waits in a plain function (the thread sleeps between polls), ``until`` in a
coroutine (the loop runs other tasks between polls; the condition may be a coroutine
function). Both return the condition's first truthy answer, and fail naming ``what`` with the
last answer seen.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

TIMEOUT_S = 30.0


def eventually(
    check: Callable[[], T],
    what: str = "the condition",
    timeout_s: float = TIMEOUT_S,
    every_s: float = 0.05,
) -> T:
    """``check()``'s first truthy answer, asked every ``every_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what} after {timeout_s:g} s: {found!r}")
        time.sleep(every_s)


async def until(
    check: Callable[[], Awaitable[T] | T],
    what: str = "the condition",
    timeout_s: float = TIMEOUT_S,
    every_s: float = 0.01,
) -> T:
    """``check()``'s first truthy answer (awaited when it is awaitable), asked every ``every_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        answer = check()
        found: T = await answer if inspect.isawaitable(answer) else answer  # type: ignore[assignment]
        if found:
            return found
        if loop.time() > deadline:
            raise AssertionError(f"gave up waiting for {what} after {timeout_s:g} s: {found!r}")
        await asyncio.sleep(every_s)
