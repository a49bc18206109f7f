"""Engine gates: a chain of checks every SendMessage goes through, for any agent, before the
agent's own intake — refusing (nothing stored), diverting to a handler (on a new task too),
noting the tasks they let through; the agent's rules about its own tasks still hold."""

from __future__ import annotations

from typing import Any

import pytest

from accord.agents._api import (
    Access,
    Admit,
    Answered,
    Divert,
    RequestContext,
    Screened,
    TaskHandle,
    Verdict,
)
from accord.agents._echo import echo
from accord.core._caller import Caller
from accord.engine import Engine
from accord.store._memory import MemoryStore
from accord.wire import A2AError, ErrorKind
from accord.wire._model import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

ALICE = Caller(identity="alice", tenant="t1")


def request(text: str, task_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id=text, role=Role.USER, parts=[Part(text=text)], task_id=task_id)
    )


class Gate:
    """Refuses "no", parks "wait" (a handler instead of the agent), passes the rest."""

    def __init__(self) -> None:
        self.screened: list[str] = []
        self.admitted: list[str] = []

    async def screen(self, request: SendMessageRequest, caller: Caller) -> Screened | None:
        text = request.message.text()
        self.screened.append(text)
        if text == "ignore":
            return None

        def judge(task: Task | None) -> Divert | None:
            if text == "no":
                raise A2AError(ErrorKind.PERMISSION_DENIED, "not this", metadata={"why": "no"})
            if text == "wait":
                return Divert(park)
            return None

        async def admitted(task_id: str) -> None:
            self.admitted.append(task_id)

        return Screened(judge, admitted)


async def park(ctx: RequestContext, task: TaskHandle) -> None:
    if ctx.task is not None:  # an interrupted task resumes before it moves again
        await task.start_working()
    await task.require_input("parked by the gate")


async def test_a_refusal_stores_nothing_and_runs_no_agent() -> None:
    store = MemoryStore()
    gate = Gate()
    async with Engine(store, echo) as engine:
        engine.add_gate(gate)
        with pytest.raises(A2AError) as refused:
            await engine.send_message(request("no"), ALICE)
        assert refused.value.metadata == {"why": "no"}
        assert await store.count_tasks("t1") == 0
        assert gate.admitted == []


async def test_a_message_let_through_reaches_the_agent_and_is_noted() -> None:
    gate = Gate()
    async with Engine(MemoryStore(), echo) as engine:
        engine.add_gate(gate)
        task = await engine.send_message(request("hello"), ALICE)
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
        assert gate.admitted == [task.id]
        ignored = await engine.send_message(request("ignore"), ALICE)
        assert isinstance(ignored, Task) and ignored.status.state is TaskState.COMPLETED
        assert gate.screened == ["hello", "ignore"]


class Picky:
    """An agent whose intake refuses "stranger" on its existing tasks, and records what it
    was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def intake(self, request: SendMessageRequest, task: Task | None, caller: Caller) -> Verdict:
        self.asked.append(request.message.text())
        if task is not None and request.message.text() == "stranger":
            raise A2AError(ErrorKind.TASK_NOT_FOUND, "no such task")
        return Admit()

    def access(self, operation: Access, task: Task, caller: Caller) -> None:
        pass

    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None:
        await task.require_input("go on")

    async def cancel(self, ctx: RequestContext, task: TaskHandle) -> None:
        pass


async def test_a_divert_takes_a_new_message_from_the_agent() -> None:
    agent = Picky()
    async with Engine(MemoryStore(), agent) as engine:
        engine.add_gate(Gate())
        task = await engine.send_message(request("wait"), ALICE)
        assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
        assert task.status.message is not None
        assert task.status.message.parts[0].text == "parked by the gate"
        assert agent.asked == []  # a new task the gate took is the gate's alone


async def test_the_agents_intake_still_judges_its_own_tasks() -> None:
    agent = Picky()
    gate = Gate()
    async with Engine(MemoryStore(), agent) as engine:
        engine.add_gate(gate)
        task = await engine.send_message(request("hello"), ALICE)
        assert isinstance(task, Task)
        # Diverted by the gate, but refused by the agent for its task: refused.
        stranger = SendMessageRequest(
            message=Message(
                message_id="s", role=Role.USER, parts=[Part(text="stranger")], task_id=task.id
            )
        )
        with pytest.raises(A2AError) as refused:
            await engine.send_message(stranger, ALICE)
        assert refused.value.kind is ErrorKind.TASK_NOT_FOUND
        parked = await engine.send_message(request("wait", task.id), ALICE)
        assert isinstance(parked, Task) and parked.status.message is not None
        assert parked.status.message.parts[0].text == "parked by the gate"
        # (an intake may be asked more than once about a message: it is pure)
        assert list(dict.fromkeys(agent.asked)) == ["hello", "stranger", "wait"]


async def test_gates_are_asked_in_order_and_the_first_divert_wins() -> None:
    order: list[str] = []

    def gate(name: str, verdict: Divert | None) -> Any:
        class Named:
            async def screen(self, request: SendMessageRequest, caller: Caller) -> Screened:
                order.append(f"screen {name}")

                def judge(task: Task | None) -> Divert | None:
                    order.append(f"judge {name}")
                    return verdict

                return Screened(judge)

        return Named()

    async with Engine(MemoryStore(), echo) as engine:
        engine.add_gate(gate("first", None))
        engine.add_gate(gate("second", Divert(park)))
        engine.add_gate(gate("third", None))
        task = await engine.send_message(request("hi"), ALICE)
        assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
    assert order[:3] == ["screen first", "screen second", "screen third"]
    assert order[3:] == ["judge first", "judge second"]


class Answering:
    """A gate that answers "ping" itself (as a protocol message between servers)."""

    async def screen(self, request: SendMessageRequest, caller: Caller) -> Answered | None:
        if request.message.text() != "ping":
            return None
        return Answered(Message(message_id="pong", role=Role.AGENT, parts=[Part(text="pong")]))


async def test_a_gates_answer_makes_no_task_whatever_the_configuration() -> None:
    """The client gets the gate's answer, sent or streamed, and nothing is stored and no agent
    runs — with returnImmediately, an inline push config, a context id of its own."""
    agent = Picky()
    store = MemoryStore()
    async with Engine(store, agent) as engine:
        engine.add_gate(Answering())
        configurations = [
            SendMessageConfiguration(),
            SendMessageConfiguration(return_immediately=True),
            SendMessageConfiguration(
                return_immediately=True,
                history_length=0,
                accepted_output_modes=["application/json"],
                task_push_notification_config=TaskPushNotificationConfig(url="ftp://refused"),
            ),
        ]
        for n, configuration in enumerate(configurations):
            ping = Message(
                message_id=f"ping-{n}", role=Role.USER, parts=[Part(text="ping")], context_id="c"
            )
            sent = SendMessageRequest(message=ping, configuration=configuration)
            answer = await engine.send_message(sent, ALICE)
            assert isinstance(answer, Message) and answer.text() == "pong"
            again = await engine.send_message(sent, ALICE)  # a retry is screened again
            assert isinstance(again, Message) and again.text() == "pong"
            streamed = await engine.send_streaming_message(sent, ALICE)
            items = [item async for item in streamed if item is not None]
            assert [item.response.message for item in items] == [answer]
        assert await store.count_tasks(ALICE.tenant) == 0
        assert agent.asked == []
