"""A harness turn whose journal meets a full disk (SQLite on a small tmpfs the test fills and
empties): the turn waits and goes on once there is space, with nothing asked or run twice; past
the bound (``store_outage_s``) it is stopped and resumed from its journal as soon as the store
answers, not failed and not left WORKING."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.full_disk import SmallDisk, small_disk

from accord.core._caller import Caller
from accord.engine import Engine, EngineConfig
from accord.harness import Conversation, HarnessAgent, HarnessSettings, ModelResponse, ToolCall
from accord.harness._steps import INTERRUPTED
from accord.harness._transcript import ToolResult
from accord.harness.models import FunctionModel
from accord.harness.tools import FunctionTool
from accord.store import SqliteStore
from accord.wire._model import Message, Part, Role, SendMessageRequest, Task, TaskState

# (they mount a small tmpfs with mount(8): a program)
pytestmark = pytest.mark.processes

ALICE = Caller(participant="alice")


class Refunds:
    """A model that refunds order 48213 with a non-idempotent tool, then reports what the
    tool said; the tool fills the disk before it answers (the harness journals its result
    next), and counts its runs."""

    def __init__(self, disk: SmallDisk) -> None:
        self.disk = disk
        self.asked: list[Conversation] = []
        self.runs: list[int] = []

        async def refund(order_id: int) -> str:
            self.runs.append(order_id)
            disk.fill()
            return f"refunded order {order_id}"

        self.tool = FunctionTool(refund)

    async def __call__(self, conversation: Conversation) -> str | ModelResponse:
        self.asked.append(conversation)
        results = [s for s in conversation.steps if isinstance(s, ToolResult)]
        if results:
            return f"the tool said: {results[-1].content}"
        return ModelResponse("", (ToolCall("refund", {"order_id": 48213}),))

    def agent(self) -> HarnessAgent:
        built = HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(self)})
        built.extra_tools.append(self.tool)
        return built


def ask(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id=f"m-{text}", role=Role.USER, parts=[Part(text=text)])
    )


def journal_failed(caplog: pytest.LogCaptureFixture) -> bool:
    return any("append to task" in r.getMessage() for r in caplog.records)


async def until_true(check: Callable[[], bool], what: str, patience: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + patience
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"gave up waiting for {what}"
        await asyncio.sleep(0.02)


async def test_a_turn_whose_journal_meets_a_full_disk_goes_on_once_there_is_space(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="accord.engine")
    with small_disk(tmp_path) as disk:
        model = Refunds(disk)
        engine = Engine(SqliteStore(str(disk.path / "tasks.db")), model.agent())
        await engine.start()
        try:
            answer = asyncio.ensure_future(engine.send_message(ask("refund it"), ALICE))
            await until_true(lambda: journal_failed(caplog), "the journal to fail")
            assert not answer.done()
            disk.free()
            task = await asyncio.wait_for(answer, 10)
            assert isinstance(task, Task)
            assert task.status.state is TaskState.INPUT_REQUIRED
            assert task.status.message is not None
            assert task.status.message.text() == "the tool said: refunded order 48213"
            assert model.runs == [48213]  # run once
            assert len(model.asked) == 2  # nothing asked twice
        finally:
            await engine.stop()


async def test_a_turn_the_store_fails_past_the_bound_resumes_from_its_journal_once_it_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="accord.engine")
    with small_disk(tmp_path) as disk:
        model = Refunds(disk)
        store = SqliteStore(str(disk.path / "tasks.db"))
        engine = Engine(store, model.agent(), EngineConfig(store_outage_s=0.2))
        await engine.start()
        try:
            answer = asyncio.ensure_future(engine.send_message(ask("refund it"), ALICE))
            await until_true(lambda: journal_failed(caplog), "the journal to fail")
            [running] = await store.tasks_in_states(frozenset({TaskState.WORKING}))
            await until_true(lambda: not engine.running(running.id), "the turn to be stopped")
            answer.cancel()

            disk.free()  # the turn resumes from its journal at once
            for _ in range(500):
                task = await engine.get_task(running.id, ALICE)
                if task.status.state is not TaskState.WORKING:
                    break
                await asyncio.sleep(0.02)
            assert task.status.state is TaskState.INPUT_REQUIRED, task.status
            assert model.runs == [48213]  # the refund's result was lost: never run again
            assert len(model.asked) == 2  # the first answer came from the journal
            [result] = [s for s in model.asked[-1].steps if isinstance(s, ToolResult)]
            assert result.error and result.content == INTERRUPTED
        finally:
            await engine.stop()
