"""The tokens of a task's model calls, each counted once in ``usage.totals``: a turn that
ends by asking a participant puts its calls' tokens on the help request; a turn resumed from
its journal after a stop counts a replayed call once; a call named by several messages is
counted once; the last turn's tokens (``usage.last_turn``) are all its calls', and ``/status``
shows them and the conversation's exactly."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from tests.harness.engine_kit import ALICE, BOB, brief, said, send, sub_state
from tests.waiting import until

from accord.engine import Engine
from accord.harness import Conversation, HarnessAgent, HarnessSettings, ModelResponse, ToolCall
from accord.harness._usage import USAGE_KEY, last_turn, totals
from accord.harness.channels._tool import ASK_PARTICIPANT
from accord.harness.models import FunctionModel, Usage
from accord.harness.tools import FunctionTool
from accord.store import SqliteStore
from accord.store._memory import MemoryStore
from accord.wire._model import Message, Part, Role, Task, TaskState, TaskStatus


class Priced:
    """A model that plays ``answers`` in order, each with the tokens it took."""

    def __init__(self, *answers: tuple[str | list[ToolCall], Usage]) -> None:
        self.answers = list(answers)
        self.asked = 0

    async def __call__(self, conversation: Conversation) -> ModelResponse:
        self.asked += 1
        answer, used = self.answers.pop(0)
        if isinstance(answer, str):
            return ModelResponse(answer, usage=used)
        return ModelResponse("", tuple(answer), usage=used)


def harness(model: Priced, *tools: FunctionTool) -> HarnessAgent:
    agent = HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(model)})
    agent.extra_tools.extend(tools)
    return agent


async def lookup(order_id: int) -> str:
    return f"order {order_id}: shipped"


async def test_a_turn_that_asks_a_participant_counts_its_tokens_on_the_request() -> None:
    ask = ToolCall(ASK_PARTICIPANT, {"participant_id": "bob", "question": "Which venue?"})
    model = Priced(
        ("Hello.", Usage(3, 1, 0)),
        ([ToolCall("lookup", {"order_id": 7})], Usage(100, 10, 40)),
        ([ask], Usage(120, 12, 60)),
        ("Booked A.", Usage(50, 5, 0)),
    )
    engine = Engine(MemoryStore(), harness(model, FunctionTool(lookup)))
    async with engine:
        task = await send(engine, ALICE, brief({"alice": "admin", "bob": "watcher"}))
        task = await send(engine, ALICE, "book a venue", task.id)
        assert sub_state(task) == "awaiting-answer"
        request = task.status.message
        assert isinstance(request, Message)
        used = request.metadata[USAGE_KEY]  # both calls of the turn that asked
        assert (used["input_tokens"], used["output_tokens"], used["cached_tokens"]) == (
            220, 22, 100,
        )  # fmt: skip
        assert totals(task) == Usage(223, 23, 100)
        task = await send(engine, BOB, "A", task.id)
        assert sub_state(task) == "awaiting-next-message"
        assert totals(task) == Usage(273, 28, 100)
        assert model.asked == 4


async def test_a_turn_resumed_from_its_journal_counts_a_replayed_call_once(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def refund(order_id: int) -> str:
        started.set()
        await asyncio.Event().wait()  # the stop cuts it
        return "refunded"

    def priced() -> Priced:
        return Priced(
            ("Hello.", Usage(3, 1, 0)),
            ([ToolCall("refund", {"order_id": 9})], Usage(20, 3, 0)),
            ("Could not confirm the refund.", Usage(9, 1, 0)),
        )

    path = str(tmp_path / "tasks.db")
    first = priced()
    engine = Engine(SqliteStore(path), harness(first, FunctionTool(refund)))
    await engine.start()
    task = await send(engine, ALICE, brief({"alice": "admin"}))
    turn = asyncio.ensure_future(send(engine, ALICE, "refund order 9", task.id))
    await asyncio.wait_for(started.wait(), 5)
    await engine.stop()  # as a crash would: the refund's call is journaled, its answer not
    turn.cancel()
    assert first.asked == 2

    again = priced()
    again.answers = again.answers[2:]  # (the journal answers the refund's call)
    engine = Engine(SqliteStore(path), harness(again, FunctionTool(refund)))
    await engine.start()  # recovery resumes the turn
    try:
        parked = await _parked(engine, task.id)
        assert again.asked == 1
        assert totals(parked) == Usage(32, 5, 0)  # 3 + 20 (replayed, once) + 9
    finally:
        await engine.stop()


def answer(calls: dict[str, list[int]]) -> Message:
    """An answer naming ``calls``."""
    return Message(
        message_id=uuid.uuid4().hex,
        role=Role.AGENT,
        parts=[Part(text="…")],
        metadata={USAGE_KEY: {"calls": calls}},
    )


def parked_with(*history: Message) -> Task:
    state = TaskStatus(state=TaskState.INPUT_REQUIRED)
    return Task(id="t", context_id="c", status=state, history=list(history))


def test_a_call_several_messages_name_is_counted_once() -> None:
    task = parked_with(
        answer({"m1#0": [10, 1, 0]}),
        answer({"m1#0": [10, 1, 0], "m1#1": [5, 2, 1]}),  # (a resumed stretch)
        Message(  # a message of before calls were named: its sums
            message_id="old",
            role=Role.AGENT,
            parts=[Part(text="…")],
            metadata={USAGE_KEY: {"input_tokens": 7, "output_tokens": 7, "cached_tokens": 0}},
        ),
    )
    assert totals(task) == Usage(22, 10, 1)
    assert last_turn(task) == Usage(15, 3, 1)  # (the old message names no turn)


def test_the_last_turn_is_its_every_stretch_and_step_each_call_once() -> None:
    first = answer({"m#1#0": [9, 9, 9]})
    assert last_turn(parked_with(first)) == Usage(9, 9, 9)  # (a turn's key may hold a "#")
    task = parked_with(
        first,
        answer({"m2#0": [10, 1, 0], "m2#1/summary": [100, 10, 0]}),
        answer({"m2#1/summary": [100, 10, 0], "m2#1": [5, 2, 1], "m2#2": [1, 1, 1]}),
    )
    assert last_turn(task) == Usage(116, 14, 2)
    assert totals(task) == Usage(125, 23, 11)
    assert last_turn(parked_with()) is None


async def _parked(engine: Engine, task_id: str) -> Task:

    async def parked() -> Task | None:
        task = await engine.get_task(task_id, ALICE)
        return task if task.status.state is TaskState.INPUT_REQUIRED else None

    return await until(parked, "the task to park", every_s=0.05)


async def test_the_model_calls_that_summarise_a_long_conversation_are_counted_once() -> None:
    """Compaction's summaries are model calls too: their tokens are in the task's totals,
    each once, beside the turns' own calls."""
    summaries = answers = 0

    async def model(conversation: Conversation) -> ModelResponse:
        nonlocal summaries, answers
        if conversation.entries[0].text.startswith("Summarise the conversation"):
            summaries += 1
            return ModelResponse("alice sent long messages", usage=Usage(1_000, 40, 100))
        answers += 1
        return ModelResponse("ok", usage=Usage(10, 1, 0))

    agent = HarnessAgent(
        HarnessSettings(model="main", context_tokens=2_000), {"main": FunctionModel(model)}
    )
    async with Engine(MemoryStore(), agent) as engine:
        task = await send(engine, ALICE, "x" * 1_000)
        for n in range(8):  # each message ~500 tokens: the budget is passed
            task = await send(engine, ALICE, f"{n} " + "y" * 2_000, task.id)
        assert summaries > 0 and answers == 9
        expected = Usage(
            1_000 * summaries + 10 * answers, 40 * summaries + answers, 100 * summaries
        )
        assert totals(task) == expected
        # (a summary's call is named apart from its step's own)
        named = [
            name
            for m in task.history
            if isinstance(m.metadata, dict) and USAGE_KEY in m.metadata
            for name in m.metadata[USAGE_KEY]["calls"]
        ]
        assert len([n for n in named if n.endswith("/summary")]) == summaries


async def test_status_shows_the_last_turns_tokens_and_the_conversations() -> None:
    model = Priced(
        ("Hello.", Usage(1_200, 30, 1_000)),
        ([ToolCall("lookup", {"order_id": 7})], Usage(100, 10, 40)),
        ("Order 7 shipped.", Usage(50, 5, 0)),
    )
    async with Engine(MemoryStore(), harness(model, FunctionTool(lookup))) as engine:
        task = await send(engine, ALICE, brief({"alice": "admin", "bob": "watcher"}))
        first = said(await send(engine, BOB, "/status", task.id)).splitlines()
        assert first[-3:-1] == [
            "Tokens, last turn: 1,200 in (1,000 cached) · 30 out",
            "Tokens, conversation: 1,200 in (1,000 cached) · 30 out",
        ]
        await send(engine, ALICE, "where is order 7?", task.id)
        # the second turn: two model calls (the tool call's and the answer's), each once
        status = said(await send(engine, ALICE, "/status", task.id))
        assert "\nTokens, last turn: 150 in (40 cached) · 15 out\n" in status
        assert "\nTokens, conversation: 1,350 in (1,040 cached) · 45 out\n" in status
        assert model.asked == 3


async def test_status_says_none_while_no_model_call_has_said_its_tokens() -> None:
    async def silent(conversation: Conversation) -> ModelResponse:
        return ModelResponse("Hello.")  # (a model that does not say what it took)

    agent = HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(silent)})
    async with Engine(MemoryStore(), agent) as engine:
        task = await send(engine, ALICE, "hello")
        status = said(await send(engine, ALICE, "/status", task.id))
        assert "\nTokens, last turn: none\nTokens, conversation: 0 in (0 cached) · 0 out" in status
