"""``accord serve --processes N``: what the supervisor decides, without a process in sight.

- Which settings can run as several processes at all (:func:`refusal`): only on a store the
  processes share (PostgreSQL), and without gRPC.
- When a process that ended is started again (:class:`Restarts`): after a backoff of 0.5 s
  that doubles with each quick exit in a row, up to 10 s; and when the exits are a crash
  loop (5 exits of one process within 30 s), after which the supervisor stops everything.

Time is passed in (``now``: ``time.monotonic()`` seconds); nothing here reads a clock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from accord.store import POSTGRES_SCHEMES

BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 10.0
CRASH_EXITS = 5  # this many exits of one process …
CRASH_WINDOW_S = 30.0  # … within this long is a crash loop
# A process that served this long before it ended starts its backoff over.
STEADY_S = CRASH_WINDOW_S


def refusal(processes: int, store: str, grpc_port: int | None) -> str | None:
    """Why these settings cannot be served by ``processes`` processes (None: they can)."""
    if processes == 1:
        return None
    # (the only store whose data every process sees: the others live in one process, memory,
    # or are held by one, a SQLite file)
    scheme = store.partition("://")[0]
    if scheme not in POSTGRES_SCHEMES:
        why = {
            "memory": "a memory store lives in one process: each would see only its own tasks",
            "sqlite": "a SQLite store is held by one process at a time",
        }.get(scheme, f"the store {scheme}:// is not one they share")
        return f"processes = {processes} needs a store the processes share (postgresql://…): {why}"
    if grpc_port is not None:
        return (
            f"processes = {processes} with gRPC (grpc_port): gRPC's server binds its own port "
            "and cannot share the inherited HTTP socket; serve gRPC from a separate "
            "accord serve with processes = 1"
        )
    return None


@dataclass
class _Slot:
    streak: int = 0  # quick exits in a row
    exits: deque[float] = field(default_factory=deque)  # when it ended, within the window


@dataclass
class Restarts:
    """The restart policy of ``processes`` processes, numbered 1 to ``processes``."""

    processes: int
    slots: dict[int, _Slot] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.slots = {index: _Slot() for index in range(1, self.processes + 1)}

    def exited(self, index: int, started: float, now: float) -> float | None:
        """Process ``index`` (started at ``started``) ended at ``now``: in how many seconds
        to start it again, or None when its exits are a crash loop (stop everything)."""
        slot = self.slots[index]
        slot.exits.append(now)
        while slot.exits and slot.exits[0] <= now - CRASH_WINDOW_S:
            slot.exits.popleft()
        if len(slot.exits) >= CRASH_EXITS:
            return None
        slot.streak = 1 if now - started >= STEADY_S else slot.streak + 1
        delay: float = min(BACKOFF_FIRST_S * 2.0 ** (slot.streak - 1), BACKOFF_MAX_S)
        return delay
