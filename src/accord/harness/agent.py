"""The harness agent: an accord executor whose intake applies the conversation rules and
whose turns are answered by a model.

Its intake (:meth:`HarnessAgent.intake`) runs before anything of a message is stored: it
establishes the sender, refuses strangers with the unknown-task error, and turns a
participant's completion into a handler that cuts the running turn. Its access check
(:meth:`HarnessAgent.access`) keeps every other operation on a harness task to its
participants. Its turns (:meth:`HarnessAgent.execute`) read the conversation from the task,
ask the task's model, and park the task with the answer.

Messages that arrive while a turn runs in this process join it: the model is asked again
with them before the task parks, and each of their senders' requests ends with that turn.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

from accord.agents.api import (
    Access,
    Admit,
    Divert,
    ExecutorFunction,
    RequestContext,
    TaskHandle,
    Verdict,
)
from accord.core._build import task_not_found
from accord.core.caller import Caller
from accord.harness.core import conversation, identity
from accord.harness.core import envelope as envelopes
from accord.harness.core.intake import Complete, Continue, Policy, Start, judge, refuse_watcher
from accord.harness.core.state import (
    extension_of,
    metadata_with,
    without_harness_keys,
)
from accord.harness.models import Model, ModelResponse
from accord.harness.settings import HarnessSettings, build_model
from accord.harness.transcript import MODEL_CALL_KEY, Conversation, entries, model_calls
from accord.harness.wire import (
    EVENT_MEDIA_TYPE,
    STATUS_URI,
    TASK_MEDIA_TYPE,
    TASK_URI,
    TaskExtension,
)
from accord.telemetry import agents as telemetry
from accord.wire.model import (
    UNSET,
    AgentExtension,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
)

INPUT_MODES = ("text/plain", "application/json", TASK_MEDIA_TYPE, EVENT_MEDIA_TYPE)
OUTPUT_MODES = ("text/plain", "application/json", TASK_MEDIA_TYPE)


@dataclass(eq=False)
class _Turn:
    """A turn running in this process: messages that come meanwhile set ``more``."""

    more: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)


class HarnessAgent:
    def __init__(
        self,
        settings: HarnessSettings,
        models: Mapping[str, Model] | None = None,
        *,
        model_factory: Callable[[str], Model] = build_model,
    ) -> None:
        """``models`` answers turns by model name; a name it lacks is built once with
        ``model_factory`` (the default reads ``scripted:PATH`` specs)."""
        self.settings = settings
        self.policy = Policy(
            agent_id=settings.agent_id,
            delegators=frozenset(settings.delegators),
            models=settings.selectable,
        )
        self._models = dict(models or {})
        self._model_factory = model_factory
        self._turns: dict[str, _Turn] = {}

    # --- the card ------------------------------------------------------------------------

    @staticmethod
    def card_extensions() -> list[AgentExtension]:
        return [
            AgentExtension(uri=uri, required=False, description=description)
            for uri, description in (
                (TASK_URI, "the harness's task data in Task.metadata (participants, roles)"),
                (STATUS_URI, "why a task is INPUT_REQUIRED (sub_state) in metadata"),
            )
        ]

    input_modes = INPUT_MODES
    output_modes = OUTPUT_MODES

    # --- intake and access ---------------------------------------------------------------

    def intake(self, request: SendMessageRequest, task: Task | None, caller: Caller) -> Verdict:
        sender = identity.sender(caller, request.message)
        judgement = judge(task, request.message, sender, self.policy)
        if isinstance(judgement, Start):
            base = without_harness_keys(request.metadata)
            return Admit(judgement.message, metadata_with(base, judgement.extension))
        assert task is not None
        if isinstance(judgement, Continue):
            metadata = None
            if judgement.extension != extension_of(task):
                current = task.metadata if task.metadata is not UNSET else {}
                metadata = metadata_with(current, judgement.extension)
            return Admit(judgement.message, metadata)
        assert isinstance(judgement, Complete)
        return Divert(self._completion(judgement.requested_by), True, judgement.message)

    def access(self, operation: Access, task: Task, caller: Caller) -> None:
        extension = extension_of(task)
        if extension is None:
            return
        reader = identity.reader(caller)
        role = extension.role_of(reader) if reader is not None else None
        if role is None:
            raise task_not_found(task.id)
        if operation == "cancel":
            refuse_watcher(role, "cancel")

    @staticmethod
    def _completion(requested_by: str) -> ExecutorFunction:
        async def complete(ctx: RequestContext, task: TaskHandle) -> None:
            await task.decide(lambda rec, now: conversation.complete(rec, now, requested_by))

        return complete

    # --- turns ---------------------------------------------------------------------------

    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None:
        running = self._turns.get(ctx.task_id)
        if running is not None:  # this message joins the turn running here
            running.more = True
            await running.done.wait()
            return
        turn = self._turns[ctx.task_id] = _Turn()
        try:
            # (accord.telemetry: counted, and a GenAI invoke_agent span with tracing on)
            with telemetry.turn(
                self.settings.agent_id, conversation_id=ctx.context_id, task_id=ctx.task_id
            ):
                await self._run(ctx, task, turn)
        finally:
            del self._turns[ctx.task_id]
            turn.done.set()

    async def cancel(self, ctx: RequestContext, task: TaskHandle) -> None:
        return None  # the engine cuts the run; the task's state is the canceller's

    async def _run(self, ctx: RequestContext, task: TaskHandle, turn: _Turn) -> None:
        current = await task.current()
        extension = extension_of(current)
        if extension is None:
            await task.fail("this task carries no harness data; it cannot run here")
            return
        if ctx.task is None and _only_envelope(ctx.message):
            # A brief and nothing else: the task waits for its first message.
            await task.decide(lambda rec, now: conversation.park(rec, now))
            return
        await task.start_working()
        while True:
            turn.more = False
            view = self._conversation(await task.current(), extension)
            model = self._model(view)
            provider = view.model.partition(":")[0] if ":" in view.model else ""
            with telemetry.model_call(view.model, provider=provider):  # (scripted:PATH …)
                response = await model.respond(view)
            answer = self._answer(ctx, view, response)
            if turn.more:  # messages came in while the model worked: answer them too
                await task.start_working(answer)
                continue
            await task.decide(partial(conversation.end_turn, answer=answer))
            return

    def _conversation(self, task: Task, fallback: TaskExtension) -> Conversation:
        extension = extension_of(task) or fallback
        return Conversation(
            task=task,
            extension=extension,
            agent_id=self.settings.agent_id,
            entries=entries(task, self.settings.agent_id),
            model_calls=model_calls(task),
            model=extension.model or self.settings.model,
            reasoning_effort=extension.reasoning_effort,
            system_prompt=self.settings.system_prompt,
        )

    def check_models(self) -> None:
        """Build every selectable model now, so that a bad one stops the server at start
        (ValueError naming it), not a conversation later."""
        for name in self.settings.selectable:
            if name not in self._models:
                try:
                    self._models[name] = self._model_factory(name)
                except ValueError as exc:
                    raise ValueError(f"harness.model: {exc}") from None

    def _model(self, view: Conversation) -> Model:
        model = self._models.get(view.model)
        if model is None:
            model = self._models[view.model] = self._model_factory(view.model)
        return model

    @staticmethod
    def _answer(ctx: RequestContext, view: Conversation, response: ModelResponse) -> Message:
        return Message(
            message_id=os.urandom(16).hex(),
            role=Role.AGENT,
            parts=[Part(text=response.text)],
            task_id=ctx.task_id,
            context_id=ctx.context_id,
            metadata={MODEL_CALL_KEY: view.model_calls},
        )


def _only_envelope(message: Message) -> bool:
    found = envelopes.find(message)
    return found is not None and len(message.parts) == 1 and found.kind == "task"


__all__ = ["EVENT_MEDIA_TYPE", "HarnessAgent"]
