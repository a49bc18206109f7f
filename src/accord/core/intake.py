"""Judging a message before anything of it is stored, as one pure decision: the engine's
gates judge it first (each may refuse it or take it from the agent), then the agent's own
intake (admit it, perhaps as changed, refuse it, or divert it to a handler), then the
lifecycle's SendMessage. What comes out is the outcome to append, and the verdict that says
who runs on the message.

The rules, which the engine follows on every binding:

- a message naming a task the caller cannot see is refused as not found by the lifecycle,
  before any gate or intake is asked about it (nobody learns the task exists);
- gates are asked in order; the first that diverts the message takes it;
- the agent's rules about its own task still hold when a gate takes the message (its intake
  may refuse it); a new task a gate diverts is the gate's alone;
- an intake may divert a message that continues a task only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from accord.core import client as client_commands
from accord.core._limits import Limits
from accord.core._outcome import Outcome, refused
from accord.core._records import TaskRecord
from accord.wire import A2AError, ErrorKind, Message, SendMessageRequest, Task


@dataclass(frozen=True, slots=True)
class Admit:
    """An intake's verdict: take the message; the agent runs on it.

    ``message`` is the message as it is to be stored (None: as sent). ``task_metadata``, when
    given, is the task's metadata with this message: a new task's own (instead of the
    request's), or an existing task's new metadata, logged right after the message as a task
    snapshot (streams and push see it)."""

    message: Message | None = None
    task_metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Divert:
    """An intake's verdict: take the message (stored as with :class:`Admit`), but run
    ``handler(ctx, task)`` (an accord.agents.ExecutorFunction) on it instead of the agent; a
    message that continues a task only. With ``interrupt`` the turns running on the task are
    cut first, here and on every node sharing the store (they stop at their next move once
    the handler has moved the task)."""

    handler: Callable[[Any, Any], Awaitable[None]]
    interrupt: bool = False
    message: Message | None = None
    task_metadata: dict[str, Any] | None = None


Verdict = Admit | Divert

# A gate's judgement of the message, given the task it continues as it stands (None for a new
# task): raises A2AError to refuse, a Divert to take it, None to pass it on.
Judge = Callable[[Task | None], Divert | None]
# The agent's intake, bound to the request and the caller: raises A2AError to refuse.
AgentIntake = Callable[[Task | None], Verdict]


@dataclass(frozen=True, slots=True)
class Admission:
    """A message judged: the outcome to append (or the refusal), and the verdict (None: the
    agent runs on the message as sent)."""

    outcome: Outcome
    verdict: Verdict | None = None


def admit(
    request: SendMessageRequest,
    record: TaskRecord | None,
    *,
    judges: Sequence[Judge],
    intake: AgentIntake | None,
    tenant: str,
    tenant_task_count: int,
    now_ms: int,
    new_task_id: str,
    new_context_id: str,
    limits: Limits,
    accept_client_context_ids: bool = True,
    input_modes: Sequence[str] | None = None,
    generations: bool = False,
) -> Admission:
    """Judge ``request`` against ``record`` (the task it names, None for a new one or one the
    caller cannot see) and decide its SendMessage (see the module's rules)."""
    diverted: Divert | None = None
    verdict: Verdict | None = None
    task = record.task if record is not None else None
    seen = record is not None or not request.message.task_id
    if judges and seen:
        try:
            for judge in judges:
                diverted = judge(task)
                if diverted is not None:
                    break
        except A2AError as refusal:
            return Admission(refused("gate-refused", refusal))
    if intake is not None and seen and (diverted is None or record is not None):
        try:
            verdict = intake(task)
        except A2AError as refusal:
            return Admission(refused("intake-refused", refusal))
        if diverted is None and isinstance(verdict, Divert) and record is None:
            needs_task = A2AError(
                ErrorKind.UNSUPPORTED_OPERATION,
                "this message needs an existing task (send its taskId)",
            )
            return Admission(refused("intake-refused", needs_task))
    if diverted is not None:
        verdict = diverted
    outcome = client_commands.send_message(
        request,
        tenant=tenant,
        task=record,
        tenant_task_count=tenant_task_count,
        now_ms=now_ms,
        new_task_id=new_task_id,
        new_context_id=new_context_id,
        limits=limits,
        accept_client_context_ids=accept_client_context_ids,
        input_modes=input_modes,
        message=verdict.message if verdict is not None else None,
        task_metadata=verdict.task_metadata if verdict is not None else None,
        generations=generations,
    )
    return Admission(outcome, verdict)
