"""The engine gate of interaction contracts: every SendMessage, on every binding and for any
agent, before the agent sees it.

- A message with neither OpenClasp's trust metadata nor a contract notice part is none of its
  business: two dictionary look-ups.
- A contract notice (proposal, acceptance, …) from the other agent is applied to the stored
  contract and answered with a receipt, as a direct message (the gate's own answer): no task
  is created and nothing of it is stored, whatever the request's configuration, and the
  agent never sees it.
- A message under a contract is judged by :func:`accord.contracts._enforcement.judge`: refused
  with PermissionDenied and the reason code in ErrorInfo's metadata (``contractReason``), and
  a log line; parked in INPUT_REQUIRED (sub-state ``awaiting-approval``) when its action
  needs a person's approval; else passed on, and its task noted as running under the contract.
"""

from __future__ import annotations

import logging
import uuid

from accord.agents import Answered, Divert, ExecutorFunction, RequestContext, Screened, TaskHandle
from accord.contracts import _enforcement as enforcement
from accord.contracts._decisions import Decision, Outcome
from accord.contracts._errors import ContractRefusal
from accord.contracts._service import ContractService
from accord.contracts._wire import (
    AWAITING_APPROVAL,
    CONTRACTS_URI,
    NOTICE_MEDIA_TYPE,
    TRUST_URI,
    Notice,
    Reference,
    asked_of,
    notice_of,
    receipt_data,
    reference_of,
)
from accord.core import Caller
from accord.wire import (
    UNSET,
    A2AError,
    ErrorKind,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)

log = logging.getLogger("accord.contracts")

_INTERRUPTED = (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED)


class ContractGate:
    def __init__(self, service: ContractService) -> None:
        self.service = service

    async def screen(
        self, request: SendMessageRequest, caller: Caller
    ) -> Screened | Answered | None:
        message = request.message
        metadata = message.metadata
        if (metadata is UNSET or TRUST_URI not in metadata) and not any(
            part.media_type == NOTICE_MEDIA_TYPE for part in message.parts
        ):
            return None
        try:
            notice = notice_of(message)
            if notice is not None:
                return await self._notice(notice, message, caller)
            reference = reference_of(message)
            assert reference is not None
            asked = asked_of(message)
        except ContractRefusal as refusal:
            raise self._refused(refusal, caller, None) from None
        record = await self.service.current(caller.tenant, reference.interaction_id)
        action = self.service.action_of(message)
        sender = caller.identity if caller.authenticated else None
        tenant = caller.tenant

        interaction_id = reference.interaction_id
        judged: list[enforcement.Decision] = []  # (the last judgement: judge may be asked again)

        def noted(outcome: Outcome, task_id: str | None, **refused: str) -> None:
            decision = Decision(self.service.clock(), outcome, task_id, sender, action, **refused)
            self.service.decisions.note(tenant, interaction_id, decision)

        def judge(task: Task | None) -> Divert | None:
            task_id = task.id if task is not None else None
            try:
                decision = enforcement.judge(
                    record,
                    reference,
                    sender=sender,
                    action=action,
                    data_classes=asked.data_classes,
                    task_id=task_id,
                    now_ms=self.service.clock(),
                )
            except ContractRefusal as refusal:
                if record is not None:  # (an unknown contract has no decisions to show)
                    noted("refused", task_id, code=refusal.code, reason=refusal.message)
                raise self._refused(refusal, caller, action) from None
            judged[:] = [decision]
            if decision == enforcement.PARK:
                assert action is not None
                return Divert(_parker(reference, action))
            return None

        async def admitted(task_id: str) -> None:
            parked = judged == [enforcement.PARK]
            noted("parked" if parked else "admitted", task_id)
            await self.service.store.bind_task(tenant, interaction_id, task_id)

        return Screened(judge, admitted)

    async def _notice(self, notice: Notice, message: Message, caller: Caller) -> Answered:
        """Apply a notice and answer it with the receipt, as the gate's own answer: no task,
        nothing of it stored, whatever the request's configuration."""
        if message.task_id:
            raise A2AError(
                ErrorKind.INVALID_PARAMS, "a contract notice starts no task: send it without taskId"
            )
        record = await self.service.receive(notice, caller)
        return Answered(
            Message(
                message_id=str(uuid.uuid4()),
                role=Role.AGENT,
                parts=[
                    Part(
                        data=receipt_data(record.interaction_id, record.status),
                        media_type=NOTICE_MEDIA_TYPE,
                    )
                ],
            )
        )

    def _refused(self, refusal: ContractRefusal, caller: Caller, action: str | None) -> A2AError:
        log.warning(
            "contract refused a message: %s interaction=%s sender=%s action=%s: %s%s",
            refusal.code,
            refusal.interaction_id or "-",
            caller.identity if caller.authenticated else "(unauthenticated)",
            action or "-",
            refusal.message,
            f" ({refusal.note})" if refusal.note else "",
        )
        return refusal.as_a2a()


def _parker(reference: Reference, action: str) -> ExecutorFunction:
    """The handler that parks a task until a person approves ``action`` on it."""
    annotation = {
        CONTRACTS_URI: {
            "sub_state": AWAITING_APPROVAL,
            "interactionId": reference.interaction_id,
            "action": action,
        }
    }

    async def park(ctx: RequestContext, task: TaskHandle) -> None:
        if ctx.task is not None and ctx.task.status.state in _INTERRUPTED:
            await task.start_working()
        await task.require_input(
            f"awaiting a person's approval of {action!r} under contract {reference.interaction_id}",
            metadata=annotation,
        )

    return park
