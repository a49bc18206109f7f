"""A turn's tool loop on the engine: the harness's own tools, function tools, a vetoing
``tool.invoked.pre``, a failing tool, the step limit, and a turn a stop cut, resumed from its
journal without repeating an answered model call or a started non-idempotent tool."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.waiting import until

from accord.core._caller import Caller
from accord.engine import Engine
from accord.harness import Conversation, HarnessAgent, HarnessSettings, ModelResponse, ToolCall
from accord.harness._step_events import is_step, step_data
from accord.harness._steps import INTERRUPTED
from accord.harness._transcript import ToolResult
from accord.harness._wire import TASK_KEY
from accord.harness.hooks import FunctionExecutor, HookAbort
from accord.harness.models import FunctionModel
from accord.harness.tools import FunctionTool
from accord.store import SqliteStore
from accord.store._memory import MemoryStore
from accord.wire._model import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)

ALICE = Caller(participant="alice")


class Script:
    """A model that plays ``answers`` in order (each a text or a list of tool calls) and
    remembers every conversation it was asked with."""

    def __init__(self, *answers: str | list[ToolCall]) -> None:
        self.answers = list(answers)
        self.asked: list[Conversation] = []

    async def __call__(self, conversation: Conversation) -> str | ModelResponse:
        self.asked.append(conversation)
        answer = self.answers.pop(0) if self.answers else "done"
        return answer if isinstance(answer, str) else ModelResponse("", tuple(answer))


def agent_with(model: Script, *, max_steps: int = 20, tools: tuple[Any, ...] = ()) -> HarnessAgent:
    agent = HarnessAgent(
        HarnessSettings(model="main", max_steps=max_steps), {"main": FunctionModel(model)}
    )
    agent.extra_tools.extend(tools)
    return agent


async def say(engine: Engine, text: str, task_id: str = "") -> Task:
    request = SendMessageRequest(
        message=Message(
            message_id=f"m-{text}-{task_id}",
            role=Role.USER,
            parts=[Part(text=text)],
            task_id=task_id,
        )
    )
    answer = await engine.send_message(request, ALICE)
    assert isinstance(answer, Task)
    return answer


def said(task: Task) -> str:
    message = task.status.message
    assert not isinstance(message, type(None)) and hasattr(message, "text")
    return message.text()  # type: ignore[union-attr]


def hanging_refund() -> tuple[FunctionTool, list[int], asyncio.Event]:
    """A non-idempotent ``refund`` whose calls never end (a stop cuts them): the tool, the
    order ids it ran for, and an event set once it started."""
    runs: list[int] = []
    started = asyncio.Event()

    async def refund(order_id: int) -> str:
        runs.append(order_id)
        started.set()
        await asyncio.Event().wait()
        return "refunded"

    return FunctionTool(refund), runs, started


async def parked(engine: Engine, task_id: str) -> Task:
    """The task once a turn (resumed at the engine's start) has parked it (or as it is
    after 5 s)."""
    for _ in range(100):
        task = await engine.get_task(task_id, ALICE)
        if task.status.state is TaskState.INPUT_REQUIRED:
            break
        await asyncio.sleep(0.05)
    return task


async def joined_turn(
    engine: Engine, calls: list[Conversation]
) -> tuple[str, list[asyncio.Future[Task]]]:
    """A turn on "order 7 is broken" that "refund it" joins while the model is first asked
    (the model waits for the test): the task's id, and the two requests (a stop cuts them)."""
    first = asyncio.ensure_future(say(engine, "order 7 is broken"))

    # (the model is asked before the task's creation is durable: wait for both)
    async def asked_and_stored() -> list[Any]:
        if not calls:
            return []
        return await engine.store.tasks_in_states(frozenset(TaskState), 10, "")

    [task_id] = [t.id for t in await until(asked_and_stored, "the model asked, the task stored")]
    joined = asyncio.ensure_future(say(engine, "refund it", task_id))
    await until(lambda: last_said(engine, task_id, "refund it"), "it to join the running turn")
    return task_id, [first, joined]


async def last_said(engine: Engine, task_id: str, text: str) -> bool:
    """Whether the task's newest message says ``text`` (a message stored joins the turn)."""
    return (await engine.get_task(task_id, ALICE)).history[-1].text() == text


async def cut_and_resumed(
    tmp_path: Path,
    agent: Callable[[], HarnessAgent],
    calls: list[Conversation],
    release: asyncio.Event,
    cut: asyncio.Event,
) -> Task:
    """A :func:`joined_turn` whose model is released, stopped once ``cut`` is set (as a
    crash would), and resumed by a new engine: the task once its turn parked."""
    path = str(tmp_path / "tasks.db")
    engine = Engine(SqliteStore(path), agent())
    await engine.start()
    task_id, sent = await joined_turn(engine, calls)
    release.set()
    await asyncio.wait_for(cut.wait(), 5)
    await engine.stop()
    for request in sent:
        request.cancel()
    engine = Engine(SqliteStore(path), agent())
    await engine.start()
    try:
        return await parked(engine, task_id)
    finally:
        await engine.stop()


async def test_a_plan_made_with_the_harness_tool_is_on_the_task() -> None:
    plan = {
        "steps": [{"name": "Find a venue"}, {"name": "Book it", "depends_on": ["Find a venue"]}]
    }
    model = Script([ToolCall("create_plan", plan)], "planned")
    engine = Engine(MemoryStore(), agent_with(model))
    await engine.start()
    try:
        task = await say(engine, "plan it")
        assert said(task) == "planned"
        steps = task.metadata[TASK_KEY]["plan"]["steps"]
        assert [(s["id"], s["depends_on"], s["state"]) for s in steps] == [
            ("find-a-venue", [], "pending"),
            ("book-it", ["find-a-venue"], "pending"),
        ]
        # The model's second call saw its call and the tool's answer.
        [result] = [s for s in model.asked[1].steps if isinstance(s, ToolResult)]
        assert result.name == "create_plan" and result.content == "the plan is set"
        assert not result.error
    finally:
        await engine.stop()


async def test_tool_errors_go_back_to_the_model_not_into_a_failed_turn() -> None:
    def explode(order_id: int) -> str:
        raise RuntimeError(f"warehouse down for {order_id}")

    model = Script(
        [ToolCall("explode", {"order_id": 7}), ToolCall("no_such_tool", {})],
        [ToolCall("complete_step", {"step": "x", "output": "y"})],  # no plan: refused
        "sorry",
    )
    engine = Engine(MemoryStore(), agent_with(model, tools=(FunctionTool(explode),)))
    await engine.start()
    try:
        task = await say(engine, "go")
        assert task.status.state is TaskState.INPUT_REQUIRED and said(task) == "sorry"
        results = [s for s in model.asked[-1].steps if isinstance(s, ToolResult)]
        assert [(r.name, r.error) for r in results] == [
            ("explode", True),
            ("no_such_tool", True),
            ("complete_step", True),
        ]
        assert "warehouse down for 7" in results[0].content
        assert "no tool named" in results[1].content
        assert "no plan" in results[2].content
    finally:
        await engine.stop()


async def test_a_tool_invoked_pre_hook_vetoes_one_call() -> None:
    ran: list[int] = []

    def refund(order_id: int) -> str:
        ran.append(order_id)
        return f"refunded {order_id}"

    def policy(point: str, context: Any) -> None:
        if context.name == "refund" and context.arguments.get("order_id") == 13:
            raise HookAbort("refunds of order 13 need a person", "policy")

    model = Script(
        [ToolCall("refund", {"order_id": 13}), ToolCall("refund", {"order_id": 14})], "ok"
    )
    agent = agent_with(model, tools=(FunctionTool(refund),))
    agent.hooks.register(FunctionExecutor("policy", policy, points=["tool.invoked.pre"]))
    engine = Engine(MemoryStore(), agent)
    await engine.start()
    try:
        await say(engine, "refund both")
        assert ran == [14]
        results = [s for s in model.asked[-1].steps if isinstance(s, ToolResult)]
        assert results[0].error and results[0].content == (
            "hook.abort: refunds of order 13 need a person"
        )
        assert results[1].content == "refunded 14"
    finally:
        await engine.stop()


async def test_the_step_limit_parks_the_turn_saying_so() -> None:
    loop = [ToolCall("create_plan", {"steps": [{"name": "again"}]})]
    model = Script(*([loop] * 10))
    engine = Engine(MemoryStore(), agent_with(model, max_steps=3))
    await engine.start()
    try:
        task = await say(engine, "go")
        assert task.status.state is TaskState.INPUT_REQUIRED
        assert said(task).startswith("I stopped after 3 model calls")
        assert len(model.asked) == 3
    finally:
        await engine.stop()


async def test_a_cut_turn_resumes_from_its_journal(tmp_path: Path) -> None:
    """A stop while a non-idempotent tool runs: the next start resumes the turn without
    asking the model again for what it answered, and reports the tool as interrupted instead
    of running it a second time."""
    refund, runs, started = hanging_refund()

    model = Script([ToolCall("refund", {"order_id": 48213})], "I could not confirm the refund")
    path = str(tmp_path / "tasks.db")
    engine = Engine(SqliteStore(path), agent_with(model, tools=(refund,)))
    await engine.start()
    turn = asyncio.ensure_future(say(engine, "refund it"))
    await asyncio.wait_for(started.wait(), 5)
    await engine.stop()  # as a crash would, the turn stops where it is
    turn.cancel()
    assert len(model.asked) == 1 and runs == [48213]

    engine = Engine(SqliteStore(path), agent_with(model, tools=(refund,)))
    await engine.start()  # recovery resumes the turn
    try:
        [task_id] = [t.id for t in (await engine.store.tasks_in_states(
            frozenset(TaskState), 10, ""
        ))]  # fmt: skip
        task = await parked(engine, task_id)
        assert said(task) == "I could not confirm the refund"
        assert runs == [48213]  # never run again
        assert len(model.asked) == 2  # the first answer came from the journal
        [result] = [s for s in model.asked[-1].steps if isinstance(s, ToolResult)]
        assert result.error and result.content == INTERRUPTED
    finally:
        await engine.stop()


async def test_a_cut_turn_a_message_joined_resumes_from_its_own_journal(tmp_path: Path) -> None:
    """A message joins the turn while its non-idempotent tool runs, then a stop cuts it:
    the resumed turn (given the newest message, not the one that started it) still finds
    its journal — the answered model call is not made again, the tool not run twice — and
    answers both messages."""
    refund, runs, started = hanging_refund()

    class Refunder(Script):
        """Refunds until it sees the refund's result (as a model would: a call made again
        is answered again, with the refund)."""

        async def __call__(self, conversation: Conversation) -> str | ModelResponse:
            self.asked.append(conversation)
            if any(isinstance(s, ToolResult) for s in conversation.steps):
                return "refund unconfirmed; noted"
            return ModelResponse("", (ToolCall("refund", {"order_id": 48213}),))

    model = Refunder()
    path = str(tmp_path / "tasks.db")
    engine = Engine(SqliteStore(path), agent_with(model, tools=(refund,)))
    await engine.start()
    first = await engine.send_message(
        SendMessageRequest(
            message=Message(message_id="m-1", role=Role.USER, parts=[Part(text="refund it")]),
            configuration=SendMessageConfiguration(return_immediately=True),
        ),
        ALICE,
    )
    assert isinstance(first, Task)
    await asyncio.wait_for(started.wait(), 5)
    joined = asyncio.ensure_future(say(engine, "and send a note", first.id))
    # the second message is stored (it joins the running turn)
    await until(lambda: last_said(engine, first.id, "and send a note"), "the second message")
    await engine.stop()  # as a crash would, the turn stops where it is
    joined.cancel()
    assert len(model.asked) == 1 and runs == [48213]

    engine = Engine(SqliteStore(path), agent_with(model, tools=(refund,)))
    await engine.start()  # recovery resumes the turn, on the newest message
    try:
        task = await parked(engine, first.id)
        assert runs == [48213]  # never run again
        assert len(model.asked) == 2  # the first answer came from the journal
        assert said(task) == "refund unconfirmed; noted"
        [result] = [s for s in model.asked[-1].steps if isinstance(s, ToolResult)]
        assert result.error and result.content == INTERRUPTED
        # (the resumed call saw the message that joined)
        assert model.asked[-1].entries[-1].text == "and send a note"
    finally:
        await engine.stop()


async def test_a_turn_cut_after_it_went_on_with_a_joined_message_resumes_its_last_stretch(
    tmp_path: Path,
) -> None:
    """The turn answers, goes on with a message that joined it, and is cut while that
    stretch's non-idempotent tool runs: the resumed turn replays that stretch (not the first
    one's answer again), never runs the tool twice, and answers once more."""
    release = asyncio.Event()
    refund, runs, started = hanging_refund()
    calls: list[Conversation] = []

    async def model(conversation: Conversation) -> str | ModelResponse:
        calls.append(conversation)
        if len(calls) == 1:
            await release.wait()  # (a message joins meanwhile)
            return "looking into it"
        if any(isinstance(s, ToolResult) for s in conversation.steps):
            return "refund unconfirmed; noted"
        return ModelResponse("", (ToolCall("refund", {"order_id": 7}),))

    def agent() -> HarnessAgent:
        built = HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(model)})
        built.extra_tools.append(refund)
        return built

    path = str(tmp_path / "tasks.db")
    engine = Engine(SqliteStore(path), agent())
    await engine.start()
    task_id, sent = await joined_turn(engine, calls)
    release.set()
    await asyncio.wait_for(started.wait(), 5)
    await engine.stop()  # as a crash would, in the second stretch's tool
    for request in sent:
        request.cancel()
    assert len(calls) == 2 and runs == [7]

    engine = Engine(SqliteStore(path), agent())
    await engine.start()
    try:
        task = await parked(engine, task_id)
        assert runs == [7]  # never run again
        assert len(calls) == 3  # the second stretch's first answer came from the journal
        assert said(task) == "refund unconfirmed; noted"
        answers = [m.text() for m in task.history if m.role is Role.AGENT and not is_step(m)]
        assert answers == ["looking into it", "refund unconfirmed; noted"]
        [result] = [s for s in calls[-1].steps if isinstance(s, ToolResult)]
        assert result.content == INTERRUPTED
    finally:
        await engine.stop()


async def test_a_turn_cut_just_after_it_answered_and_went_on_answers_the_joined_message(
    tmp_path: Path,
) -> None:
    """Cut after the turn gave its first answer and went on with a joined message, before
    anything of the next stretch was journaled: the resumed turn does not give the first
    answer again, it asks the model about the joined message."""
    release, second = asyncio.Event(), asyncio.Event()
    calls: list[Conversation] = []

    async def model(conversation: Conversation) -> str:
        calls.append(conversation)
        if len(calls) == 1:
            await release.wait()  # (a message joins meanwhile)
            return "looking into it"
        if len(calls) == 2:
            second.set()
            await asyncio.Event().wait()  # the stop cuts it
        return "refunded, as you asked"

    def agent() -> HarnessAgent:
        return HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(model)})

    task = await cut_and_resumed(tmp_path, agent, calls, release, second)
    answers = [m.text() for m in task.history if m.role is Role.AGENT and not is_step(m)]
    assert answers == ["looking into it", "refunded, as you asked"]
    assert len(calls) == 3 and "refund it" in [e.text for e in calls[-1].entries]


async def test_a_turn_cut_after_its_journaled_answer_answers_the_message_that_joined_it(
    tmp_path: Path,
) -> None:
    """A message joins while the model answers; the answer is journaled, then a stop cuts
    the turn before it is given: the resumed turn gives that answer without asking again,
    then answers the joined message (the call that gave the answer had not seen it)."""
    release, finishing = asyncio.Event(), asyncio.Event()
    calls: list[Conversation] = []

    async def model(conversation: Conversation) -> str:
        calls.append(conversation)
        if len(calls) == 1:
            await release.wait()  # (a message joins meanwhile)
            return "looking into it"
        return "refunded, as you asked"

    async def hold(point: str, context: Any) -> None:
        if not finishing.is_set():
            finishing.set()
            await asyncio.Event().wait()  # the stop cuts the turn here

    def agent() -> HarnessAgent:
        built = HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(model)})
        built.hooks.register(FunctionExecutor("hold", hold, points=["turn.finished.pre"]))
        return built

    task = await cut_and_resumed(tmp_path, agent, calls, release, finishing)
    answers = [m.text() for m in task.history if m.role is Role.AGENT and not is_step(m)]
    assert answers == ["looking into it", "refunded, as you asked"]
    assert len(calls) == 2 and "refund it" in [e.text for e in calls[-1].entries]


@pytest.mark.parametrize("idempotent", [True, False])
async def test_an_idempotent_tool_runs_again_after_a_cut(tmp_path: Path, idempotent: bool) -> None:
    first = asyncio.Event()
    runs: list[str] = []

    async def lookup(order_id: int) -> str:
        runs.append("run")
        if len(runs) == 1:
            first.set()
            await asyncio.Event().wait()  # the first run never ends: the stop cuts it
        return "found"

    model = Script([ToolCall("lookup", {"order_id": 1})], "answered")
    tool = FunctionTool(lookup, idempotent=idempotent)
    path = str(tmp_path / "tasks.db")
    engine = Engine(SqliteStore(path), agent_with(model, tools=(tool,)))
    await engine.start()
    turn = asyncio.ensure_future(say(engine, "look it up"))
    await asyncio.wait_for(first.wait(), 5)
    await engine.stop()
    turn.cancel()
    engine = Engine(SqliteStore(path), agent_with(model, tools=(tool,)))
    await engine.start()
    try:
        await until(lambda: len(model.asked) == 2, "the resumed turn to ask the model")
        [result] = [s for s in model.asked[-1].steps if isinstance(s, ToolResult)]
        if idempotent:
            assert runs == ["run", "run"] and result.content == "found"
        else:
            assert runs == ["run"] and result.content == INTERRUPTED
    finally:
        await engine.stop()


async def test_a_conversation_past_its_budget_is_compacted_and_the_summary_recorded() -> None:
    asked: list[Conversation] = []

    async def model(conversation: Conversation) -> str:
        asked.append(conversation)
        if conversation.entries[0].text.startswith("Summarise the conversation"):
            return "alice wants an offsite; dates open"
        return f"ok ({len(conversation.entries)} entries)"

    agent = HarnessAgent(
        HarnessSettings(model="main", context_tokens=2_000), {"main": FunctionModel(model)}
    )
    engine = Engine(MemoryStore(), agent)
    await engine.start()
    try:
        task = await say(engine, "x" * 1_000)
        for n in range(12):  # each message ~500 tokens: the budget is passed
            task = await say(engine, f"{n} " + "y" * 2_000, task.id)
        summaries = [c for c in asked if c.entries[0].text.startswith("Summarise")]
        assert summaries, "no compaction happened"
        last = asked[-1]
        assert last.entries[0].text == (
            "[summary of the conversation before this point] alice wants an offsite; dates open"
        )
        assert sum(len(e.text) for e in last.entries) // 4 < 2_000  # it fits
        recorded = task.metadata["accord.harness/summary"]
        assert recorded["text"] == "alice wants an offsite; dates open"
        assert 0 < recorded["upto"] < len(task.history)
        # The compaction is an event of the log: a task snapshot carrying the summary.
        events = await engine.store.read_events(task.id, 0)
        assert any(
            e.kind == "task" and "accord.harness/summary" in (e.body.metadata or {})  # type: ignore[union-attr]
            for e in events
        )
    finally:
        await engine.stop()


class Appends(MemoryStore):
    """The in-memory store, recording the kinds of each append's events (one append is one
    commit on a durable store)."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: list[list[str]] = []

    def append(self, record: Any, events: Any, expected_seq: int, **options: Any) -> Any:
        self.kinds.append([event.body.data["kind"] for event in events if event.kind == "journal"])
        return super().append(record, events, expected_seq, **options)


async def test_a_steps_entries_are_durable_before_what_follows_from_them_in_three_appends() -> None:
    """A model answer with two non-idempotent tool calls: the answer rides in one append with
    the first tool's "started" entry, the first result with the second's, the second result
    alone — each stored before the tool it precedes runs and before the model sees it, and
    no step event out before the entries it reports."""
    store = Appends()
    seen: dict[str, list[str]] = {}

    async def stored(task_id: str) -> list[str]:
        """The task's journal entries and step events as stored, in order (by kind)."""
        events = await store.read_events(task_id, 0)
        return [
            e.body.data["kind"] if e.kind == "journal" else str(step.get("kind"))
            for e in events
            if e.kind == "journal" or (e.kind == "status" and (step := _step_of(e)) is not None)
        ]

    async def weigh(order_id: int) -> str:
        [task_id] = [t.id for t in await store.tasks_in_states(frozenset(TaskState), 10, "")]
        seen["weigh"] = [kind for kind in await stored(task_id) if "_" not in kind]
        return "2 kg"

    async def ship(order_id: int) -> str:
        [task_id] = [t.id for t in await store.tasks_in_states(frozenset(TaskState), 10, "")]
        seen["ship"] = [kind for kind in await stored(task_id) if "_" not in kind]
        return "shipped"

    model = Script(
        [ToolCall("weigh", {"order_id": 1}, "c1"), ToolCall("ship", {"order_id": 1}, "c2")],
        "done",
    )
    engine = Engine(store, agent_with(model, tools=(FunctionTool(weigh), FunctionTool(ship))))
    await engine.start()
    try:
        task = await say(engine, "send order 1")
        assert said(task) == "done"
        logged = await stored(task.id)
    finally:
        await engine.stop()
    assert seen["weigh"] == ["model", "tool-start"]
    assert seen["ship"] == ["model", "tool-start", "tool-result", "tool-start"]
    assert [kinds for kinds in store.kinds if kinds] == [
        ["model", "tool-start"],
        ["tool-result", "tool-start"],
        ["tool-result"],
        ["model"],
    ]
    # (each step event after the entries it reports: the answer's after it is stored, a
    # call's after its result)
    assert logged == [
        "model",
        "tool-start",
        "model_call",
        "tool-result",
        "tool-start",
        "tool_call",
        "tool-result",
        "tool_call",
        "model",
    ]


def _step_of(event: Any) -> dict[str, Any] | None:
    message = event.body.status.message
    if not isinstance(message, Message) or not is_step(message):
        return None
    return step_data(message)
