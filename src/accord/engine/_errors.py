"""What a client is told when the store refuses or loses a write.

Shared by the engine and its push-config commands: the store's own limit checks (which close
the race between concurrent writers) must answer exactly as the checks before them do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from accord.core import client as client_commands
from accord.store import LimitExceeded, unavailable
from accord.wire import A2AError, ErrorKind

if TYPE_CHECKING:
    from accord.engine._live import LiveTask

NOT_STORED_MESSAGE = "the task could not be stored"
UNAVAILABLE_MESSAGE = "the task store cannot be read or written now; try again later"
# What a client is asked to wait before sending the request again (Retry-After, RetryInfo).
RETRY_AFTER_S = 1


def unavailable_error() -> A2AError:
    """The store cannot answer now: the client may send the same request again later
    (nothing of the store's own message, which may name hosts or files, is shown)."""
    return A2AError(ErrorKind.UNAVAILABLE, UNAVAILABLE_MESSAGE, retry_after_s=RETRY_AFTER_S)


def failure_error(exc: BaseException) -> A2AError | None:
    """The error a client is told of an exception no A2AError names, when the store is its
    cause (:func:`accord.store._base.unavailable`); None otherwise (a bug: the binding's
    internal error). The one place that maps storage failures, for every binding."""
    return unavailable_error() if unavailable(exc) else None


def limit_error(exc: LimitExceeded) -> A2AError:
    """The store's refusal as the client gets it: the same error the check before it gives."""
    if exc.limit == "tasks_per_tenant":
        return client_commands.task_limit_error(exc.value)
    return client_commands.config_limit_error(exc.value, exc.task_id)


def message_lost(live: LiveTask) -> A2AError | None:
    """What the client of a new task is told when its creation could not be stored, or the
    client of a message held for its run's first command when that append failed."""
    error = live.broken
    durable = live.durable
    if error is None or (durable is not None and durable.seq >= live.message_seq):
        return None
    if isinstance(error, LimitExceeded):
        return limit_error(error)
    if unavailable(error):  # (database down, disk full: the same request may pass later)
        return unavailable_error()
    return A2AError(ErrorKind.INTERNAL, NOT_STORED_MESSAGE)
