"""A turn's model steps: ask the model — its text reaching clients as it writes, as chunks of
an artifact named ``reply`` — run the tools it calls, ask again, until it answers without a
tool call or the turn's step limit is reached.

Crash safety: every model answer and every tool result is journaled in the task's log
(``TaskHandle.journal``) before the harness acts on it, and a tool that is not idempotent is
journaled as started before it runs. Entries that may wait ride in one commit with the next
that may not (:class:`_Held`): a model answer with the first tool's "started" entry, a tool's
result with the next tool's; each is durable before the tool it precedes runs and before the
model sees it, and the step events that report them go out after it is. A final answer (no
tool calls) is not journaled here: its entry (:attr:`Answer.entry`) goes in the append that
ends the turn, or is journaled before anything acts on it (:func:`journaled`); a crash before
then loses that model call only. A turn that runs again after a crash (the engine's
``resume``) replays its journal: an answered model call is not made again, a journaled tool
result is used as it is, and a non-idempotent tool that started and has no result is reported
to the model as interrupted, never run a second time.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import msgspec

from accord.agents import Decision, TaskHandle
from accord.core import Outcome, TaskRecord
from accord.core import agent as agent_commands
from accord.harness import _usage as usage
from accord.harness._chunks import stream_chunks
from accord.harness._compacting import Compactor
from accord.harness._journal import (
    JournalCall,
    ModelAnswered,
    ToolFinished,
    ToolStarted,
    decode,
    encode,
)
from accord.harness._moves import Who
from accord.harness._step_events import StepEvents
from accord.harness._transcript import Conversation, ModelStep, Step, ToolCall, ToolResult
from accord.harness.hooks._base import HookAbort
from accord.harness.hooks._operations import LLM_INVOKED, TOOL_INVOKED, LlmInvoked, ToolInvoked
from accord.harness.hooks._registry import Hooks
from accord.harness.models import Model, ModelResponse, StreamingModel, Usage
from accord.harness.tools import ToolContext, ToolOutcome, ToolSet
from accord.telemetry import agents as telemetry
from accord.wire import Role

REPLY = "reply"  # the artifact the model's text streams into
INTERRUPTED = (
    "interrupted: accord stopped while this tool ran, and it is not safe to run twice; it "
    "was not run again (check its effect before calling it again)"
)


@dataclass(frozen=True, slots=True)
class Answer:
    """A turn's final answer: the text, the tokens its model calls took (each by its id,
    :func:`accord.harness._usage.call_id`), and how many model calls; ``ended``: a tool
    ended the turn (the task is parked already, the text is none, and the tool's message
    carries the tokens); ``seen``: the text came from the journal (a resumed turn), given
    by a model call that saw the task's first ``seen`` messages; ``answers``: how many of the
    task's first messages the answer answers (it goes right after them in the history);
    ``entry``: the journal entry of the model call that gave the text, not appended yet — the
    caller appends it with the turn's end (:func:`journaled`), or journals it before it acts
    on the answer otherwise (hooks, a turn that goes on)."""

    text: str
    used: dict[str, Usage]
    calls: int
    ended: bool = False
    seen: int | None = None
    answers: int | None = None
    entry: dict[str, Any] | None = None

    @property
    def usage(self) -> Usage:
        return sum(self.used.values(), Usage())


@dataclass
class Journal:
    """What a turn journaled so far (a resumed turn starts from it): ``turn`` its key and
    ``first_step`` the first step of its stretch (a turn that goes on with messages that
    joined it numbers its later steps on)."""

    turn: str = ""
    first_step: int = 0
    models: dict[int, ModelAnswered] = field(default_factory=dict)  # step -> answer
    started: set[str] = field(default_factory=set)  # tool call ids begun
    results: dict[str, ToolFinished] = field(default_factory=dict)  # call id -> result

    @classmethod
    def resumed(
        cls,
        entries: Sequence[tuple[int, Mapping[str, Any]]],
        fresh: str,
        given: Collection[str] = (),
    ) -> Journal:
        """The journal of the stretch of work a crash cut, from ``entries``: those written
        since the task last moved into WORKING (only the cut turn wrote since). Its key is
        theirs, whichever message started the turn or came since; with none, the turn
        starts afresh under ``fresh`` (a key no earlier turn used). A stretch whose answer
        is among the ``given`` messages' ids (the turn went on with messages that joined
        it) is over: the next one starts. JournalError: an entry this accord cannot read."""
        if not entries:
            return cls(turn=fresh)
        read = [decode(data) for _, data in entries]
        last = read[-1]
        turn = last.turn
        answered = last.step if isinstance(last, ModelAnswered) and not last.tool_calls else None
        if answered is not None and answer_id(turn, answered) in given:
            return cls(turn=turn, first_step=answered + 1)
        resumed = cls(turn=turn, first_step=last.first_step)
        for entry in read:
            if entry.turn != resumed.turn or entry.first_step != resumed.first_step:
                continue  # (an earlier stretch of the turn, answered already)
            if isinstance(entry, ModelAnswered):
                resumed.models[entry.step] = entry
            elif isinstance(entry, ToolStarted):
                resumed.started.add(entry.call_id)
            else:
                resumed.results[entry.call_id] = entry
        return resumed


@dataclass(frozen=True, slots=True)
class _Mark:
    """What each journal entry of a stretch of a turn carries: the turn's key (its first
    message's id) and the stretch's first step."""

    turn: str
    first_step: int


def answer_id(turn: str, step: int) -> str:
    """The id of the answer a turn's stretch gives, its last model call ``step``."""
    return f"{turn}#{step}:answer"


class Steps:
    def __init__(self, hooks: Hooks, max_steps: int, compactor: Compactor | None = None) -> None:
        self.hooks = hooks
        self.max_steps = max_steps
        self.compactor = compactor or Compactor(0)

    async def run(
        self,
        task: TaskHandle,
        view: Conversation,
        model: Model,
        tools: ToolSet,
        turn: str,
        who: Who,
        journal: Journal | None = None,
        first_step: int = 0,
    ) -> Answer:
        """Ask ``model`` (and run the tools it calls) until it answers; steps are numbered
        from ``first_step`` (a turn that goes on with messages that joined it)."""
        journal = journal or Journal()
        mark = _Mark(turn, first_step)  # (what each of its journal entries carries)
        # (visible work; a resumed turn does not send again what its cut run sent)
        resumed = bool(journal.models or journal.results)
        asked_of = len(view.task.history)  # (the messages its model calls answer)
        shown = StepEvents(task, turn, _sent(view) if resumed else (), after=asked_of)
        steps: list[Step] = []
        used: dict[str, Usage] = {}  # (the tokens of each model call of this stretch)
        held = _Held(task)
        for number in range(first_step, first_step + self.max_steps):
            calls_before = number - first_step
            asked = view.asking(tuple(steps), tools.specs, view.model_calls + calls_before)
            recorded = journal.models.get(number)
            entry: dict[str, Any] | None = None  # (a fresh answer's journal entry)
            if recorded is not None:
                response = recorded.response()
            else:
                fitted = await self.compactor.fit(task, asked, model)
                asked = fitted.view
                if fitted.summary_usage is not None:  # (a summary made for this step)
                    used[usage.summary_id(turn, number)] = fitted.summary_usage
                try:
                    response, entry = await self._ask(task, asked, model, mark, number, who)
                except HookAbort as abort:
                    refused = f"model call refused: {abort.message}"
                    return Answer(refused, used, calls_before, answers=asked_of + shown.noted)
                if response.tool_calls:  # (durable before its tools run: held until then)
                    held.add(entry)
                    entry = None
            if response.usage is not None:
                used[usage.call_id(turn, number)] = response.usage
            if not response.tool_calls:  # (its tokens are on the answer: usage.USAGE_KEY)
                seen = recorded.seen if recorded is not None else None
                # (after what it answered and this stretch's step events, before a message
                # that joined while it ran)
                answers = seen if seen is not None else asked_of + shown.noted
                return Answer(
                    response.text,
                    used,
                    calls_before + 1,
                    seen=seen,
                    answers=answers,
                    entry=entry,
                )
            replayed = recorded is not None
            await held.show(shown.model_call, number, view.model, response, replayed)
            steps.append(ModelStep(response.text, response.tool_calls))
            ended = False
            for call in response.tool_calls:
                result = journal.results.get(call.id)
                began = time.perf_counter()
                if result is not None:
                    outcome = ToolOutcome(result.content, result.error)
                    # (what hooks showed of its arguments is not journaled: withheld)
                    arguments = None if self.hooks.wants(TOOL_INVOKED) else call.arguments
                else:
                    call_number = view.model_calls + calls_before
                    outcome, arguments = await self._tool(
                        task, tools, call, mark, who, journal, held, call_number, dict(used)
                    )
                took = None if result is not None else (time.perf_counter() - began) * 1000
                # (a call that ended the turn parked the task, and its message shows it; the
                # task's status message is that one's from then on)
                if not (ended or outcome.ends_turn):
                    await held.show(
                        shown.tool_call,
                        number,
                        call.id,
                        call.name,
                        arguments,
                        outcome.content,
                        outcome.error,
                        took,
                        result is not None,
                    )
                ended = ended or outcome.ends_turn
                steps.append(ToolResult(call.id, call.name, outcome.content, outcome.error))
            await held.flush()  # (the step's results, durable before the model sees them)
            if ended:  # (the step's other calls ran: each has its result)
                return Answer(response.text, used, calls_before + 1, ended=True)
        text = (
            f"I stopped after {self.max_steps} model calls in this turn without a final "
            "answer (the turn's limit); send a message to go on."
        )
        return Answer(text, used, self.max_steps, answers=asked_of + shown.noted)

    # --- one model call ----------------------------------------------------------------------

    async def _ask(
        self,
        task: TaskHandle,
        view: Conversation,
        model: Model,
        mark: _Mark,
        step: int,
        who: Who,
    ) -> tuple[ModelResponse, dict[str, Any]]:
        """The model's answer to ``view``, as the hooks leave it, and its journal entry (not
        appended: the caller does, before it acts on the answer)."""
        turn = mark.turn
        context = LlmInvoked(**who.fields(view.task_id), model=view.model, step=step)
        hooked = self.hooks.wants(LLM_INVOKED)
        pre, body, post = LLM_INVOKED.points
        if hooked:
            context = await self.hooks.run(pre, context)
        provider = view.model.partition(":")[0] if ":" in view.model else ""
        with telemetry.model_call(view.model, provider=provider):
            response = await self._answer(task, view, model, f"{REPLY}-{turn}-{step}")
        response = _with_ids(response, turn, step)
        if hooked:
            # (the model call is the body: ``in`` and ``post`` see its answer, and may
            # replace it)
            after = await self.hooks.run(body, _llm_after(context, response))
            after = await self.hooks.run(post, after)
            response = ModelResponse(
                text=after.text,
                tool_calls=tuple(
                    ToolCall(str(c.get("name", "")), dict(c.get("arguments", {})), str(c["id"]))
                    for c in after.tool_calls
                ),
                usage=response.usage,
            )
        answered = ModelAnswered(
            turn=turn,
            first_step=mark.first_step,
            step=step,
            seen=len(view.task.history),  # (what it answered: a resumed turn's check)
            text=response.text,
            tool_calls=[JournalCall(c.id, c.name, c.arguments) for c in response.tool_calls],
            usage=response.usage,
        )
        return response, encode(answered)

    @staticmethod
    async def _answer(
        task: TaskHandle, view: Conversation, model: Model, artifact_id: str
    ) -> ModelResponse:
        """The model's answer; a streaming model's text goes out as it comes, as ``append``
        chunks of the artifact ``artifact_id`` (named ``reply``), as many as the store keeps
        up with (accord.harness._chunks): the last one carries text and says it is the last
        (``lastChunk``), no chunk is ever an empty text part."""
        if not streams(model):
            return await model.respond(view)
        return await stream_chunks(task, model.stream(view), artifact_id, REPLY)

    # --- one tool call -----------------------------------------------------------------------

    async def _tool(
        self,
        task: TaskHandle,
        tools: ToolSet,
        call: ToolCall,
        mark: _Mark,
        who: Who,
        journal: Journal,
        held: _Held,
        model_call: int = -1,
        used: dict[str, Usage] | None = None,
    ) -> tuple[ToolOutcome, dict[str, Any] | None]:
        """The call's outcome, and its arguments as the ``tool.invoked`` hooks left them
        (None: a hook refused the call). Its result's entry is ``held``: durable with the
        next entry, before anything acts on it."""
        tool = tools.get(call.name)
        arguments: dict[str, Any] | None = call.arguments
        if tool is None:
            outcome = ToolOutcome(f"there is no tool named {call.name!r}", error=True)
        elif call.id in journal.started and not tool.idempotent:
            outcome = ToolOutcome(INTERRUPTED, error=True)
        else:
            outcome, arguments = await self._run_tool(
                task, tool, call, mark, who, held, model_call, used or {}
            )
        finished = ToolFinished(
            turn=mark.turn,
            first_step=mark.first_step,
            call_id=call.id,
            name=call.name,
            content=outcome.content,
            error=outcome.error,
        )
        held.add(encode(finished))
        return outcome, arguments

    async def _run_tool(
        self,
        task: TaskHandle,
        tool: Any,
        call: ToolCall,
        mark: _Mark,
        who: Who,
        held: _Held,
        model_call: int,
        used: dict[str, Usage],
    ) -> tuple[ToolOutcome, dict[str, Any] | None]:
        arguments = call.arguments
        context = ToolInvoked(
            **who.fields(task.task_id),
            name=call.name,
            call_id=call.id,
            arguments=arguments,
            idempotent=tool.idempotent,
        )
        hooked = self.hooks.wants(TOOL_INVOKED)
        pre, body, post = TOOL_INVOKED.points
        if hooked:
            try:
                context = await self.hooks.run(pre, context)
            except HookAbort as abort:
                return ToolOutcome(f"hook.abort: {abort.message}", error=True), None
            arguments = context.arguments
        if not tool.idempotent:
            started = ToolStarted(
                turn=mark.turn, first_step=mark.first_step, call_id=call.id, name=call.name
            )
            held.add(encode(started))
        await held.flush()  # (what the tool follows from, durable before it runs)
        with telemetry.tool_call(call.name):
            outcome: ToolOutcome = await tool.call(
                arguments,
                ToolContext(
                    task.task_id,
                    sender=who.sender,
                    sender_role=who.role,
                    task=task,
                    correlation_id=who.correlation_id,
                    model_call=model_call,
                    call_id=call.id,
                    used=used,
                ),
            )
        if hooked:
            # (the tool call is the body: ``in`` and ``post`` see its answer; an abort there
            # answers the model with the reason instead)
            after = msgspec.structs.replace(context, content=outcome.content, error=outcome.error)
            try:
                after = await self.hooks.run(post, await self.hooks.run(body, after))
            except HookAbort as abort:
                return ToolOutcome(f"hook.abort: {abort.message}", error=True), arguments
            outcome = ToolOutcome(after.content, after.error, outcome.ends_turn)
            # (what the model and clients see of the arguments: as ``in`` and ``post`` left them)
            arguments = after.arguments
        return outcome.bounded(), arguments


class _Held:
    """Journal entries of a turn's step decided and not yet durable, and the step events that
    report them (sent once they are): :meth:`flush` makes them durable in one commit."""

    __slots__ = ("entries", "events", "task")

    def __init__(self, task: TaskHandle) -> None:
        self.task = task
        self.entries: list[dict[str, Any]] = []
        self.events: list[Callable[[], Awaitable[None]]] = []

    def add(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)

    async def show(self, event: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Send a step event now, or once the entries it reports are durable."""
        if self.entries:
            self.events.append(lambda: event(*args))
        else:
            await event(*args)

    async def flush(self) -> None:
        if self.entries:
            entries, self.entries = self.entries, []
            await self.task.decide(journal_all(entries, self.task.task_id))
        events, self.events = self.events, []
        for event in events:
            await event()


def journal_all(entries: Sequence[dict[str, Any]], task_id: str) -> Decision:
    """The journal ``entries`` appended in order, in one decision (one commit)."""

    def decide(record: TaskRecord | None, now_ms: int) -> Outcome:
        outcome: Outcome | None = None
        for data in entries:
            noted = agent_commands.journal(record, data, now_ms, task_id)
            if not noted.ok:
                return noted
            outcome = noted if outcome is None else noted.after(outcome)
            record = noted.record
        assert outcome is not None
        return outcome

    return decide


def journaled(entry: dict[str, Any] | None, decision: Decision, task_id: str) -> Decision:
    """``decision`` with a final answer's journal entry (:attr:`Answer.entry`) decided before
    it: one append, so the entry is durable exactly when what the answer decided is."""
    if entry is None:
        return decision
    noting = journal_all((entry,), task_id)

    def decide(record: TaskRecord | None, now_ms: int) -> Outcome:
        noted = noting(record, now_ms)
        if not noted.ok:
            return noted
        return decision(noted.record, now_ms).after(noted)

    return decide


def _sent(view: Conversation) -> frozenset[str]:
    """The ids of the agent's messages the task holds (a resumed turn's step events)."""
    return frozenset(m.message_id for m in view.task.history if m.role is Role.AGENT)


def _llm_after(context: LlmInvoked, response: ModelResponse) -> LlmInvoked:
    return msgspec.structs.replace(
        context,
        text=response.text,
        tool_calls=tuple(_call_data(call) for call in response.tool_calls),
    )


def _call_data(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


# Whether each model class streams: isinstance against the runtime-checkable StreamingModel
# protocol looks up the protocol's members on every call (~8 µs a model step on Python 3.11),
# so it is decided once per class. A model streams by its class's ``stream`` method, not by
# one set on an instance.
_STREAMING: dict[type, bool] = {}


def streams(model: Model) -> TypeGuard[StreamingModel]:
    """Whether ``model`` writes its answer as it comes (a StreamingModel)."""
    kind = type(model)
    streaming = _STREAMING.get(kind)
    if streaming is None:
        streaming = _STREAMING[kind] = issubclass(kind, StreamingModel)
    return streaming


def _with_ids(response: ModelResponse, turn: str, step: int) -> ModelResponse:
    """Every tool call with an id (a scripted model gives none): the journal's keys."""
    if all(call.id for call in response.tool_calls):
        return response
    calls = tuple(
        call if call.id else ToolCall(call.name, call.arguments, f"{turn}-{step}-{index}")
        for index, call in enumerate(response.tool_calls)
    )
    return dataclasses.replace(response, tool_calls=calls)
