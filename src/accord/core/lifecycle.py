"""The task lifecycle, written once, as data.

Each move names the state it leads to and the states it may start from. Every command that
changes a task's state consults this table and nothing else; ``docs/lifecycle.md`` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass

from accord.wire import TaskState

S = TaskState

TERMINAL: frozenset[TaskState] = frozenset({S.COMPLETED, S.FAILED, S.CANCELED, S.REJECTED})
INTERRUPTED: frozenset[TaskState] = frozenset({S.INPUT_REQUIRED, S.AUTH_REQUIRED})
ACTIVE: frozenset[TaskState] = frozenset({S.SUBMITTED, S.WORKING})
NON_TERMINAL: frozenset[TaskState] = ACTIVE | INTERRUPTED


@dataclass(frozen=True, slots=True)
class Move:
    name: str
    to: TaskState
    sources: frozenset[TaskState]


# A new task starts SUBMITTED. The agent works on it (WORKING; repeated WORKING updates carry
# progress messages), and from SUBMITTED or WORKING ends it or interrupts it. An interrupted
# task resumes with WORKING after the client's next message, or fails. Anything not terminal
# can be canceled. Terminal states have no way out.
MOVES: dict[str, Move] = {
    move.name: move
    for move in (
        Move("work", S.WORKING, NON_TERMINAL),
        Move("complete", S.COMPLETED, ACTIVE),
        Move("fail", S.FAILED, NON_TERMINAL),
        Move("reject", S.REJECTED, ACTIVE),
        Move("require_input", S.INPUT_REQUIRED, ACTIVE),
        Move("require_auth", S.AUTH_REQUIRED, ACTIVE),
        Move("cancel", S.CANCELED, NON_TERMINAL),
    )
}


def can_move(move: str, state: TaskState) -> bool:
    return state in MOVES[move].sources


def is_terminal(state: TaskState) -> bool:
    return state in TERMINAL


def ends_turn(state: TaskState) -> bool:
    """A terminal or interrupted state: the agent waits for nobody or for the client."""
    return state in TERMINAL or state in INTERRUPTED
