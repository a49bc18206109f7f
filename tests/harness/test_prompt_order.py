"""The prompt follows the task's order, over any interleaving (hypothesis) of messages, streamed
answers, tool calls, messages that join a running model call, and crashes (the engine stopped
mid-call, a new one resuming the turn from its journal):

- every prompt is the task's history as it stands, in order (a prefix of the final history);
- each answer sits right after the messages its model call saw, and a message that came while
  the call ran comes after that answer;
- a prompt never ends with an assistant message, and the Messages API's roles alternate from a
  user message;
- the final history is that same order.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.waiting import until

from accord.core._caller import Caller
from accord.engine import Engine
from accord.harness import Conversation, HarnessAgent, HarnessSettings, ModelResponse, ToolCall
from accord.harness._transcript import entries
from accord.harness.models import ModelEvent, TextDelta
from accord.harness.models._prompt import anthropic_messages, chat_messages
from accord.harness.tools import FunctionTool
from accord.store import SqliteStore
from accord.wire._model import Message, Part, Role, SendMessageRequest, Task, TaskState

pytestmark = pytest.mark.unit

ALICE = Caller(participant="alice")
Said = tuple[str, str]  # (role, text) of an entry


@dataclass
class _Call:
    number: int
    tool: bool = False
    go: asyncio.Event = field(default_factory=asyncio.Event)


class Gated:
    """A streaming model whose every call writes its first token, then waits for the test to
    say how it ends: with its text (``A<n>``), or with a tool call. Each prompt is kept."""

    def __init__(self) -> None:
        self.numbers = itertools.count()
        self.pending: list[_Call] = []
        self.prompts: list[tuple[int, tuple[Said, ...], bool]] = []  # call, entries, steps?
        self.saw: dict[str, frozenset[str]] = {}  # answer -> the users its call saw
        self.wrong: list[str] = []  # prompts that broke the rules (told after the run)

    async def respond(self, conversation: Conversation) -> ModelResponse:
        raise AssertionError("streamed")

    async def stream(self, conversation: Conversation) -> AsyncIterator[ModelEvent]:
        call = _Call(next(self.numbers))
        said = tuple((e.role, e.text) for e in conversation.entries)
        self.prompts.append((call.number, said, bool(conversation.steps)))
        try:
            check_prompt(conversation)
        except AssertionError as broken:
            self.wrong.append(str(broken))
        self.pending.append(call)
        try:
            yield TextDelta(f"A{call.number} ")
            await call.go.wait()
        finally:
            if call in self.pending:  # (a crash forgets the calls it cut)
                self.pending.remove(call)
        if call.tool:
            yield ModelResponse(f"A{call.number} ", (ToolCall("note", {}, f"c{call.number}"),))
            return
        answer = f"A{call.number} done"
        self.saw[answer] = frozenset(text for role, text in said if role == "user")
        yield TextDelta("done")
        yield ModelResponse(answer)


def check_prompt(conversation: Conversation) -> None:
    said = [(e.role, e.text) for e in conversation.entries]
    assert said and said[-1][0] == "user", said  # never an assistant message last
    assert chat_messages(conversation)[-1]["role"] in ("user", "tool")
    _, messages = anthropic_messages(conversation)
    roles = [m["role"] for m in messages]
    assert roles[0] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    # every answer right after the messages its call saw
    for index, (role, text) in enumerate(said):
        if role == "agent":
            seen = {t for r, t in said[:index] if r == "user"}
            assert seen == GATED.saw.get(text, seen), (text, said)


GATED = Gated()  # (check_prompt reads what each answer's call saw)


async def note() -> str:
    """Notes it."""
    return "noted"


def agent() -> HarnessAgent:
    made = HarnessAgent(HarnessSettings(model="main", max_steps=50), {"main": GATED})
    made.extra_tools.append(FunctionTool(note))
    return made


def request(text: str, task_id: str) -> SendMessageRequest:
    message = Message(message_id=text, role=Role.USER, parts=[Part(text=text)], task_id=task_id)
    return SendMessageRequest(message=message)


class Driver:
    def __init__(self, path: str) -> None:
        self.path = path
        self.engine = Engine(SqliteStore(path), agent())
        self.sent: list[asyncio.Future[object]] = []
        self.task_id = ""
        self.texts = (f"m{n}" for n in itertools.count())

    async def start(self) -> None:
        await self.engine.start()

    async def read(self) -> Task:
        record = await self.engine.store.get_task(self.task_id, None)
        assert record is not None
        return record.task

    async def settled(self) -> None:
        """Until the model is asked, or no turn runs."""

        async def check() -> bool:
            if GATED.pending or GATED.wrong:
                return True
            if not self.task_id:
                return False
            return (await self.read()).status.state is TaskState.INPUT_REQUIRED

        await until(check, "the model asked, or the task parked", timeout_s=10)

    async def message(self) -> None:
        text = next(self.texts)
        if not self.task_id:
            self.sent.append(
                asyncio.ensure_future(self.engine.send_message(request(text, ""), ALICE))
            )
            await until(lambda: GATED.pending, "the first model call", timeout_s=10)

            async def stored() -> list[object]:  # (its creation is durable a little after)
                return await self.engine.store.tasks_in_states(frozenset(TaskState), 10, "")

            [task] = await until(stored, "the task stored", timeout_s=10)
            self.task_id = task.id
            return
        running = bool(GATED.pending)
        sent = self.engine.send_message(request(text, self.task_id), ALICE)
        self.sent.append(asyncio.ensure_future(sent))

        async def stored() -> bool:
            return any(m.message_id == text for m in (await self.read()).history)

        await until(stored, f"{text} stored", timeout_s=10)
        if not running:  # (its own turn: the model is asked)
            await until(lambda: GATED.pending or GATED.wrong, f"{text}'s turn", timeout_s=10)

    async def release(self, tool: bool) -> None:
        call = GATED.pending[0]
        call.tool = tool
        call.go.set()
        await until(lambda: call not in GATED.pending, "the call to end", timeout_s=10)
        await self.settled()

    async def crash(self) -> None:
        await self.engine.stop()  # (as a crash would: the turn stops where it is)
        for sent in self.sent:
            sent.cancel()
        self.sent.clear()
        GATED.pending.clear()
        self.engine = Engine(SqliteStore(self.path), agent())
        await self.engine.start()  # recovery resumes the turn from its journal
        await self.settled()

    async def finish(self) -> Task:
        while GATED.pending:
            await self.release(tool=False)
        for sent in self.sent:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(sent, 10)
        task = await self.read()
        await self.engine.stop()
        return task


OPS = st.lists(st.sampled_from(["message", "answer", "tool", "join", "crash"]), max_size=12)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(ops=OPS)
def test_the_prompt_is_always_the_task_history_in_order(ops: list[str]) -> None:
    asyncio.run(_run(ops))


async def _run(ops: list[str]) -> None:
    GATED.__init__()  # type: ignore[misc]
    with tempfile.TemporaryDirectory() as folder:
        driver = Driver(str(Path(folder) / "tasks.db"))
        await driver.start()
        try:
            await driver.message()
            for op in ops:
                if op in ("answer", "tool") and GATED.pending:
                    await driver.release(tool=op == "tool")
                elif op == "crash" and GATED.pending:
                    await driver.crash()
                else:  # a message: it joins the running model call, if one runs
                    await driver.message()
            task = await driver.finish()
        finally:
            with contextlib.suppress(Exception):
                await driver.engine.stop()
    assert not GATED.wrong, GATED.wrong
    final = tuple((e.role, e.text) for e in entries(task, "accord"))
    # Every prompt was the history as it stood: the final history begins with it.
    for number, said, _ in GATED.prompts:
        assert final[: len(said)] == said, (number, said, final)
    # The final history: each answer right after what its call saw, a user message before
    # the first answer, the last message an answer (the turn ended).
    for index, (role, text) in enumerate(final):
        if role == "agent":
            assert {t for r, t in final[:index] if r == "user"} == GATED.saw[text], final
    assert final[0][0] == "user" and final[-1][0] == "agent", final
