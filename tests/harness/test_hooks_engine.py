"""Hooks on the engine: executors by priority then registration order, each abort reason at
each phase, what each operation does with a replacement and with a refusal, and contexts
that keep their facts."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tests.harness.engine_kit import (
    ALICE,
    BOB,
    CAROL,
    CONTROL,
    Recorder,
    brief,
    envelope,
    extension,
    replaced,
    running,
    said,
    said_metadata,
    send,
    sub_state,
)
from tests.waiting import until

from accord.engine import Engine
from accord.harness import Conversation, HarnessAgent, HarnessSettings
from accord.harness._wire import CHANNEL_MEDIA_TYPE, Role
from accord.harness.hooks import (
    CommandInvoked,
    FunctionExecutor,
    HookAbort,
    Hooks,
    MessageReceived,
    ParticipantChanged,
    TaskStateChanged,
    TurnFinished,
    TurnStarted,
)
from accord.harness.models import FunctionModel
from accord.store._memory import MemoryStore
from accord.wire._codec import to_builtins
from accord.wire._errors import A2AError, ErrorKind
from accord.wire._model import (
    ListTasksRequest,
    Message,
    Part,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)
from accord.wire._model import Role as MessageRole

PHASES = ("pre", "in", "post")
REASONS = ("refused", "policy", "invalid")


async def test_executors_run_by_priority_then_registration_order() -> None:
    hooks = Hooks()
    order: list[str] = []

    def record(name: str) -> Any:
        def handler(point: str, context: TurnStarted) -> TurnStarted:
            order.append(name)
            return replaced(context, model=context.model + name)

        return handler

    for name, priority in (("c", 500), ("a", 10), ("d", 500), ("b", 10), ("e", 1000)):
        hooks.register(
            FunctionExecutor(name, record(name), priority=priority, points=["turn.started.pre"])
        )
    hooks.register(FunctionExecutor("elsewhere", record("x"), points=["turn.started.post"]))
    hooks.freeze()
    context = TurnStarted(task_id="t", sender="alice", model="m")
    out = await hooks.run("turn.started.pre", context)
    assert order == ["a", "b", "c", "d", "e"]
    assert out.model == "mabcde"  # each got what the one before returned


async def test_a_hook_may_not_change_a_contexts_facts_nor_its_type() -> None:
    hooks = Hooks()
    hooks.register(
        FunctionExecutor(
            "impostor",
            lambda p, c: replaced(c, sender="mallory"),
            points=["turn.started.pre"],
        )
    )
    hooks.register(
        FunctionExecutor("elevator", lambda p, c: replaced(c, sender_role=Role.ADMIN),
                         points=["turn.started.in"])
    )  # fmt: skip
    hooks.register(FunctionExecutor("odd", lambda p, c: "text", points=["turn.started.post"]))
    context = TurnStarted(task_id="t", sender="alice", sender_role=Role.WATCHER, model="m")
    for phase, words in (
        ("pre", "hook 'impostor' failed: changed sender"),
        ("in", "hook 'elevator' failed: changed sender_role"),
        ("post", "hook 'odd' failed: returned str, not TurnStarted"),
    ):
        with pytest.raises(HookAbort) as failed:
            await hooks.run(f"turn.started.{phase}", context)
        assert failed.value.reason == "refused"
        assert failed.value.message.startswith(words)


async def test_a_hook_for_an_unknown_operation_is_refused_at_registration() -> None:
    with pytest.raises(ValueError, match=r"no operation 'weather\.changed'"):
        Hooks().register(FunctionExecutor("x", lambda p, c: None, points=["weather.changed.pre"]))
    with pytest.raises(ValueError, match="not a hook point"):
        Hooks().register(FunctionExecutor("x", lambda p, c: None, points=["turn.started.during"]))


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("reason", REASONS)
async def test_each_abort_reason_at_each_phase_refuses_the_command(phase: str, reason: str) -> None:
    def setup(agent: HarnessAgent) -> None:
        def abort(point: str, context: CommandInvoked) -> None:
            raise HookAbort("not now", reason)

        agent.hooks.register(FunctionExecutor("gate", abort, points=[f"command.invoked.{phase}"]))

    async with running(setup=setup) as (engine, _):
        task = await send(engine, ALICE, "hello")
        answered = await send(engine, ALICE, "/effort high", task.id)
        assert said(answered) == f"{reason}: not now"
        assert said_metadata(answered) == {"command": "effort"}
        assert answered.status.state is TaskState.INPUT_REQUIRED
        assert extension(answered)["reasoning_effort"] is None  # not even after the body


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("reason", REASONS)
async def test_each_abort_reason_at_each_phase_refuses_the_message(phase: str, reason: str) -> None:
    model = Recorder()

    def setup(agent: HarnessAgent) -> None:
        def abort(point: str, context: MessageReceived) -> None:
            if "secret" in str(context.message):
                raise HookAbort("no secrets here", reason)

        agent.hooks.register(FunctionExecutor("dlp", abort, points=[f"message.received.{phase}"]))

    async with running(model=model, setup=setup) as (engine, _):
        task = await send(engine, ALICE, "hello")
        with pytest.raises(A2AError) as refused:
            await send(engine, ALICE, "the secret is 42", task.id)
        assert refused.value.kind is ErrorKind.UNSUPPORTED_OPERATION
        assert refused.value.message == "message not accepted: no secrets here"
        assert refused.value.metadata == {"reason": reason}
        # Refused before it was stored: the task is as it was, its history without it.
        after = await engine.get_task(task.id, ALICE)
        assert after.status.state is TaskState.INPUT_REQUIRED
        assert sub_state(after) == "awaiting-next-message"
        assert "secret" not in str(to_builtins(after))
        assert len(model.seen) == 1
        await send(engine, ALICE, "fine", task.id)
        assert model.last_users == ["hello", "fine"]  # never the refused one


async def test_a_replaced_message_is_what_every_later_turn_sees() -> None:
    model = Recorder()
    store = MemoryStore()

    def redact(point: str, context: MessageReceived) -> MessageReceived | None:
        parts = context.message["parts"]
        if "4111" not in parts[0].get("text", ""):
            return None
        message = {**context.message, "parts": [{"text": "card [redacted]"}]}
        return replaced(context, message=message)

    def setup(agent: HarnessAgent) -> None:
        agent.hooks.register(FunctionExecutor("redact", redact, points=["message.received.in"]))

    async with running(store, model, setup=setup) as (engine, _):
        task = await send(engine, ALICE, "hello")
        answer = await send(engine, ALICE, "card 4111 1111", task.id)
        assert said(answer) == "main: hello | card [redacted]"
        # The participant's message is kept as sent; only the model's view is replaced.
        history = (await engine.get_task(task.id, ALICE)).history
        assert "card 4111 1111" in [m.text() for m in history]
    # After a restart, on the same store, the next turn sees the replacement too.
    async with running(store, model) as (engine, _):
        await send(engine, ALICE, "next", task.id)
        assert model.last_users == ["hello", "card [redacted]", "next"]


async def test_turn_started_chooses_a_selectable_model_or_refuses_the_turn() -> None:
    model = Recorder()

    def setup(agent: HarnessAgent) -> None:
        def route(point: str, context: TurnStarted) -> TurnStarted | None:
            if context.sender == "bob":
                return replaced(context, model="other", reasoning_effort="low")
            if context.sender == "carol":
                return replaced(context, model="gpt-9")
            return None

        def closed(point: str, context: TurnStarted) -> None:
            if context.sender == "dora":
                raise HookAbort("closed for the day", "policy")

        agent.hooks.register(FunctionExecutor("route", route, points=["turn.started.pre"]))
        agent.hooks.register(FunctionExecutor("closed", closed, points=["turn.started.in"]))

    async with running(model=model, setup=setup) as (engine, _):
        task = await send(engine, ALICE, brief({"bob": "reporter", "carol": "reporter",
                                                "dora": "reporter"}))  # fmt: skip
        assert said(task).startswith("main: ")
        by_bob = await send(engine, BOB, "hi", task.id)
        assert said(by_bob).startswith("other: ")
        assert model.seen[-1].reasoning_effort == "low"
        calls = len(model.seen)
        by_carol = await send(engine, CAROL, "hi", task.id)
        assert said(by_carol) == "turn refused: model 'gpt-9' is not selectable"
        by_dora = await send(engine, dora(), "hi", task.id)
        assert said(by_dora) == "turn refused: closed for the day"
        assert by_dora.status.state is TaskState.INPUT_REQUIRED
        assert len(model.seen) == calls


def dora() -> Any:
    from accord.core._caller import Caller

    return Caller(participant="dora")


async def test_turn_finished_replaces_the_answer_or_withholds_it() -> None:
    def setup(agent: HarnessAgent) -> None:
        def polish(point: str, context: TurnFinished) -> TurnFinished:
            if "damn" in context.text:
                raise HookAbort("language", "policy")
            return replaced(context, text=context.text.upper())

        agent.hooks.register(FunctionExecutor("polish", polish, points=["turn.finished.post"]))

    async with running(setup=setup) as (engine, _):
        task = await send(engine, ALICE, "hello")
        assert said(task) == "MAIN: HELLO"
        withheld = await send(engine, ALICE, "damn", task.id)
        assert said(withheld) == "answer withheld: language"
        assert withheld.status.state is TaskState.INPUT_REQUIRED


async def test_task_state_changed_tells_each_change_once_durable_and_cannot_undo_it() -> None:
    seen: list[tuple[str, str, str | None, str]] = []

    def setup(agent: HarnessAgent) -> None:
        def watch(point: str, context: TaskStateChanged) -> None:
            if point.endswith(".post"):
                seen.append((context.previous, context.state, context.sub_state, context.sender))
            raise HookAbort("ignored", "policy")

        agent.hooks.register(FunctionExecutor("watch", watch, points=["task.state_changed.post"]))

    async with running(setup=setup) as (engine, agent):
        task = await send(engine, ALICE, "hello")
        await send(engine, ALICE, "/status", task.id)  # a reply in the same state: no change
        # (the completion cuts the turn that parked the task: its change is told anyway)
        done = await send(engine, ALICE, [CONTROL], task.id)
        assert done.status.state is TaskState.COMPLETED
        await agent.moves.drain()  # told after the change is durable, not before the reply
    assert seen == [
        ("SUBMITTED", "WORKING", None, "alice"),
        ("WORKING", "INPUT_REQUIRED", "awaiting-next-message", "alice"),
        ("INPUT_REQUIRED", "WORKING", None, "alice"),
        ("WORKING", "COMPLETED", None, "alice"),
    ]


async def test_participant_changed_may_replace_or_refuse_an_admins_change() -> None:
    heard: list[list[tuple[str, str]]] = []

    def setup(agent: HarnessAgent) -> None:
        def no_new_admins(point: str, context: ParticipantChanged) -> ParticipantChanged:
            if any(p.id == "mallory" for p in context.participants):
                raise HookAbort("mallory is banned", "policy")
            demoted = tuple(
                replaced(p, role=Role.WATCHER)
                if p.role is Role.ADMIN and p not in context.previous
                else p
                for p in context.participants
            )
            return replaced(context, participants=demoted)

        def hear(point: str, context: ParticipantChanged) -> None:
            heard.append([(p.id, p.role.value) for p in context.participants])

        agent.hooks.register(FunctionExecutor("gate", no_new_admins,
                                              points=["participant.changed.pre"]))  # fmt: skip
        agent.hooks.register(FunctionExecutor("hear", hear, points=["participant.changed.post"]))

    model = Recorder()
    async with running(model=model, setup=setup) as (engine, _):
        task = await send(engine, ALICE, brief({"alice": "admin", "bob": "watcher"}))

        def change(*who: tuple[str, str]) -> list[Part]:
            listed = [{"id": i, "kind": "human", "role": r} for i, r in who]
            listed.append({"id": "accord", "kind": "agent", "role": "assignee"})
            return [envelope({"kind": "task", "payload": {"participants": listed}})]

        refused = await send(
            engine, ALICE, change(("alice", "admin"), ("mallory", "reporter")), task.id
        )
        assert said(refused) == "message not accepted: mallory is banned"
        assert [p["id"] for p in extension(refused)["participants"]] == ["alice", "bob", "accord"]
        assert heard == []
        promoted = await send(engine, ALICE, change(("alice", "admin"), ("bob", "admin")), task.id)
        roles = [(p["id"], p["role"]) for p in extension(promoted)["participants"]]
        assert roles == [("alice", "admin"), ("bob", "watcher"), ("accord", "assignee")]
        assert heard == [roles]
        # The accepted change's turn ran; the refused one never reached the model.
        assert said(promoted).startswith("main: ")
        assert "mallory" not in " ".join(model.last_users)


async def test_a_refused_message_changes_nothing_of_its_task() -> None:
    """Judged before it is stored, a refused task envelope's change is not made (its
    participant change would have started a turn, ``participant.changed`` being hooked)."""

    def setup(agent: HarnessAgent) -> None:
        agent.hooks.register(FunctionExecutor("hear", lambda p, c: None,
                                              points=["participant.changed.post"]))  # fmt: skip

        def no_bob(point: str, context: MessageReceived) -> None:
            if "bob" in str(context.message):
                raise HookAbort("no bob today", "policy")

        agent.hooks.register(FunctionExecutor("strict", no_bob,
                                              points=["message.received.pre"]))  # fmt: skip

    async with running(setup=setup) as (engine, _):
        task = await send(engine, ALICE, brief({"alice": "admin"}, text="hello"))
        people = [
            {"id": "alice", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "watcher"},
            {"id": "accord", "kind": "agent", "role": "assignee"},
        ]
        with pytest.raises(A2AError) as refused:
            await send(
                engine, ALICE, [envelope({"kind": "task", "payload": {"participants": people}})],
                task.id,
            )  # fmt: skip
        assert refused.value.message == "message not accepted: no bob today"
        after = await engine.get_task(task.id, ALICE)
        assert after.status.state is TaskState.INPUT_REQUIRED
        assert sub_state(after) == "awaiting-next-message"
        assert [p["id"] for p in extension(after)["participants"]] == ["alice", "accord"]
        with pytest.raises(A2AError) as stranger:
            await send(engine, BOB, "/status", task.id)
        assert stranger.value.kind is ErrorKind.TASK_NOT_FOUND


async def test_a_hook_that_refuses_is_counted_by_its_name() -> None:
    from accord.telemetry.agents import STATS

    counts = STATS.hook_aborts.counts  # (past 64 names, the rest count as "other")

    def setup(agent: HarnessAgent) -> None:
        def gate(point: str, context: CommandInvoked) -> None:
            raise HookAbort("no", "policy")

        def broken(point: str, context: TurnStarted) -> None:
            raise RuntimeError("bug")

        agent.hooks.register(FunctionExecutor("counted-gate", gate,
                                              points=["command.invoked.pre"]))  # fmt: skip
        agent.hooks.register(FunctionExecutor("counted-bug", broken, points=["turn.started.in"]))

    before = sum(counts.values())
    async with running(setup=setup) as (engine, _):
        task = await send(engine, ALICE, "hello")
        await send(engine, ALICE, "/status", task.id)
    assert sum(counts.values()) == before + 2
    for name in ("counted-gate", "counted-bug"):
        assert (name,) in counts or ("other",) in counts


CARD = "4111 1111 1111 1111"


async def test_a_refused_message_is_stored_nowhere_whichever_way_it_comes() -> None:
    """``message.received`` judges every message a participant sends before it is stored:
    a new task's first, one to a parked conversation, one that joins a running turn, a
    channel message, a command, a completion. Each refused is refused outright (the sender
    gets the error), and the card number is nowhere: not in the task (its whole history, its
    metadata), not in a task made from it, not in what the model read."""
    model = Recorder()
    release = asyncio.Event()
    judged: list[str] = []

    async def slow_first(conversation: Conversation) -> str:
        if conversation.text == "think":
            await release.wait()
        return await model(conversation)

    def setup(agent: HarnessAgent) -> None:
        def no_card_numbers(point: str, context: MessageReceived) -> None:
            judged.append(context.message["messageId"])
            if "4111" in json.dumps(context.message):
                raise HookAbort("no card numbers", "policy")

        agent.hooks.register(
            FunctionExecutor("dlp", no_card_numbers, points=["message.received.pre"])
        )

    def card_channel(task_id: str) -> list[Part]:
        data = {"channel_id": task_id, "sender": "alice", "text": f"card {CARD}"}
        return [Part(data=data, media_type=CHANNEL_MEDIA_TYPE)]

    async with running(model=slow_first, setup=setup) as (engine, _):

        async def refused(parts: list[Part] | str, task_id: str = "") -> None:
            with pytest.raises(A2AError) as error:
                await send(engine, ALICE, parts, task_id)
            assert error.value.kind is ErrorKind.UNSUPPORTED_OPERATION
            assert error.value.message == "message not accepted: no card numbers"

        await refused(f"pay with {CARD}")  # a new task
        await refused([Part(text="plan"), envelope({"kind": "task", "payload": {
            "name": "n", "goal": f"pay {CARD}"}})])  # a brief  # fmt: skip
        task = await send(engine, ALICE, "hello")
        await refused(f"my card is {CARD}", task.id)  # to the parked conversation
        await refused(card_channel(task.id), task.id)  # on the task's channel
        await refused(f"/sub-task pay with {CARD}", task.id)  # a command
        await refused([Part(text=f"done, {CARD}"), CONTROL], task.id)  # a completion
        # A message that would join a running turn.
        turn = SendMessageRequest(
            message=Message(message_id="think", role=MessageRole.USER, parts=[Part(text="think")],
                            task_id=task.id),
            configuration=SendMessageConfiguration(return_immediately=True),
        )  # fmt: skip
        await engine.send_message(turn, ALICE)

        async def working() -> bool:
            return (await engine.get_task(task.id, ALICE)).status.state is TaskState.WORKING

        await until(working, "the turn running")
        await refused(f"also {CARD}", task.id)
        release.set()
        done = await send(engine, ALICE, "fine", task.id)
        assert said(done).startswith("main: hello")
        # Nothing of the refused messages anywhere.
        listed = await engine.list_tasks(ListTasksRequest(history_length=100), ALICE)
        assert [t.id for t in listed.tasks] == [task.id]
        assert CARD not in str(to_builtins(listed))
        assert CARD not in str(to_builtins(await engine.get_task(task.id, ALICE)))
        assert not any(CARD in text for seen in model.seen for text in _users(seen))
        # Each message was judged once: before it was stored, not again in its turn.
        assert len(judged) == len(set(judged)) == 10
        # A stranger's message is not judged: the task is unknown to them, whatever it says.
        with pytest.raises(A2AError) as stranger:
            await send(engine, BOB, f"card {CARD}", task.id)
        assert stranger.value.kind is ErrorKind.TASK_NOT_FOUND
        assert len(judged) == 10


async def test_message_received_hooks_need_the_harness_attached_to_its_engine() -> None:
    """Its gate is what judges messages before they are stored: without it the harness does
    not start (rather than judge after storing)."""
    agent = HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(Recorder())})
    agent.hooks.register(FunctionExecutor("dlp", lambda p, c: None,
                                          points=["message.received.pre"]))  # fmt: skip
    engine = Engine(MemoryStore(), agent)
    with pytest.raises(ValueError, match=r"attach it first \(agent.attach_engine\(engine\)"):
        await engine.start()
    await engine.stop()


def _users(conversation: Conversation) -> list[str]:
    return [entry.text for entry in conversation.entries if entry.role == "user"]
