"""Channel messages reach the roster's agent participants: as a SendMessage each, once per
recipient, in order, from the durable outbox, retried while an agent is down, given up after
``max_attempts`` (and the next message goes on). The agents here are fakes that record what
they are sent; tests/harness/test_channel_processes.py has real ones."""

from __future__ import annotations

import asyncio
import json

import msgspec
import pytest
from tests.harness.channel_kit import asking, channel, with_agents
from tests.harness.engine_kit import ALICE, Recorder, brief, said, send, sub_state
from tests.waiting import until

from accord.core._caller import Caller
from accord.harness import Conversation, HarnessAgent
from accord.harness._wire import CHANNEL_MEDIA_TYPE, EVENT_MEDIA_TYPE, TASK_KEY
from accord.harness.channels._outbox import TASK_REF_KEY, DeliverySettings
from accord.harness.channels._outbox_store import ChannelOutbox, channel_outbox
from accord.harness.hooks import HookAbort
from accord.harness.hooks._operations import ChannelReceived, MessageReceived
from accord.store._base import TaskStore
from accord.wire._codec import to_builtins
from accord.wire._errors import A2AError
from accord.wire._model import Message, Part, Role, SendMessageRequest, Task

HELPER = Caller(participant="helper")


def team(*channels: dict[str, object]) -> list[Part]:
    """A brief: alice reporter, the agents helper and scout watchers; ``channels`` too."""
    parts = brief({"alice": "admin"})
    payload = parts[1].data["payload"]
    payload["participants"] += [
        {"id": agent, "kind": "agent", "role": "watcher"} for agent in ("helper", "scout")
    ]
    if channels:
        payload["channels"] = list(channels)
    return [parts[0], Part(data=parts[1].data, media_type=EVENT_MEDIA_TYPE)]


async def settled(task: Task, store: TaskStore) -> None:
    """Wait until the outbox owes nothing more for ``task``."""
    outbox = channel_outbox(store)

    async def owes_nothing() -> bool:
        return not any(row.state == "pending" for row in await outbox.deliveries(task.id))

    await until(owes_nothing, "the outbox to owe nothing")


async def failures(outbox: ChannelOutbox, task_id: str, count: int) -> bool:
    """Whether a delivery of the task's has failed ``count`` times (its reason recorded)."""
    return any(row.failures >= count for row in await outbox.deliveries(task_id))


async def failing(outbox: ChannelOutbox, task_id: str) -> bool:
    return any(row.state == "failing" for row in await outbox.deliveries(task_id))


async def test_a_help_request_reaches_only_its_addressee_once_and_its_reply_resumes() -> None:
    recorder = Recorder()
    async with with_agents(asking(recorder), "helper", "scout") as (engine, _, agents):
        task = await send(engine, ALICE, team())
        task = await send(engine, ALICE, "ask helper Which venue? | A | B", task.id)
        assert sub_state(task) == "awaiting-answer"
        request = task.status.message
        assert request is not None
        await agents.wait(1)
        await settled(task, engine.store)
        [(who, delivered)] = agents.got
        assert who == "helper"
        assert delivered.message_id == request.message_id  # what a help_reply names
        assert delivered.role is Role.USER
        assert [p.text for p in delivered.parts[:1]] == ["@helper Which venue?\nOptions: A, B"]
        assert delivered.parts[1].media_type == CHANNEL_MEDIA_TYPE
        assert delivered.parts[1].data == {
            "channel_id": task.id, "sender": "accord", "kind": "help_request",
            "text": "Which venue?", "parts": [], "in_reply_to": None,
        }  # fmt: skip
        # No credentials for it: the harness names itself, as tiny-harness servers read.
        assert delivered.metadata == {TASK_REF_KEY: task.id, "participant_id": "accord"}
        reply = channel(
            channel_id=task.id, sender="helper", kind="help_reply",
            in_reply_to=request.message_id, text="A",
        )  # fmt: skip
        task = await send(engine, HELPER, [reply], task.id)
        assert sub_state(task) == "awaiting-next-message"
        assert recorder.last_users[-1] == 'Reply from helper to "Which venue?": A'
        assert said(task).endswith('Reply from helper to "Which venue?": A')
        await agents.wait(2)
        await settled(task, engine.store)
        # The reply is a message of the default channel: its other agent member gets it.
        assert [(who, m.parts[-1].data["text"]) for who, m in agents.got[1:]] == [("scout", "A")]


async def test_a_channel_message_reaches_every_agent_member_but_its_sender() -> None:
    ops = {"channel_id": "ops", "members": ["alice", "helper", "scout"]}
    async with with_agents(asking(Recorder()), "helper", "scout") as (engine, _, agents):
        task = await send(engine, ALICE, team(ops))
        task = await send(
            engine, ALICE, [channel(channel_id="ops", sender="alice", text="hi")], task.id
        )
        task = await send(
            engine, HELPER, [channel(channel_id="ops", sender="helper", text="yo")], task.id
        )
        await agents.wait(3)
        await settled(task, engine.store)
        got = [(who, m.parts[-1].data["sender"], m.parts[-1].data["text"]) for who, m in agents.got]
        assert sorted(got) == [
            ("helper", "alice", "hi"),
            ("scout", "alice", "hi"),
            ("scout", "helper", "yo"),
        ]
        # A participant's message goes as its relay, by the relay's id: one id per message.
        ids = {m.message_id for _, m in agents.got}
        assert len(ids) == 2 and all(i.startswith(f"{task.id}:channel:") for i in ids)


async def test_an_agent_down_for_a_while_gets_every_message_once_in_order() -> None:
    ops = {"channel_id": "ops", "members": ["alice", "helper"]}
    async with with_agents(asking(Recorder()), "helper", "scout") as (engine, _, agents):
        agents.down.add("helper")
        task = await send(engine, ALICE, team(ops))
        for n in range(3):
            part = channel(channel_id="ops", sender="alice", text=f"m{n}")
            await send(engine, ALICE, [part], task.id)
        outbox = channel_outbox(engine.store)
        await until(lambda: failures(outbox, task.id, 2), "failures recorded with their reason")
        assert agents.got == []
        [row, *_] = await outbox.deliveries(task.id)
        assert "ConnectionFailedError: connection refused" in row.last_error
        agents.down.clear()
        await agents.wait(3)
        await settled(task, engine.store)
        assert [m.parts[-1].data["text"] for m in agents.of("helper")] == ["m0", "m1", "m2"]
        assert {r.state for r in await outbox.deliveries(task.id)} == {"delivered"}


async def test_delivery_gives_up_after_max_attempts_and_the_next_message_goes_on() -> None:
    delivery = DeliverySettings(max_attempts=2, retry_base_s=0.01, poll_interval_s=0.05)
    ops = {"channel_id": "ops", "members": ["alice", "helper"]}
    async with with_agents(asking(Recorder()), "helper", delivery=delivery) as (
        engine,
        _,
        agents,
    ):
        agents.down.add("helper")
        task = await send(engine, ALICE, team(ops))
        await send(engine, ALICE, [channel(channel_id="ops", sender="alice", text="lost")], task.id)
        outbox = channel_outbox(engine.store)
        await until(lambda: failing(outbox, task.id), "the delivery to be failing")
        assert agents.attempts == 2
        agents.down.clear()
        await send(engine, ALICE, [channel(channel_id="ops", sender="alice", text="next")], task.id)
        await agents.wait(1)
        assert [m.parts[-1].data["text"] for m in agents.of("helper")] == ["next"]
        states = [r.state for r in await outbox.deliveries(task.id)]
        assert states[0] == "failing"


async def test_agents_not_on_the_roster_and_the_harness_itself_are_never_sent_anything() -> None:
    async with with_agents(asking(Recorder()), "helper") as (engine, _, agents):
        task = await send(engine, ALICE, team())  # scout is an agent participant, not listed
        task = await send(engine, ALICE, "ask scout Anything?", task.id)
        assert sub_state(task) == "awaiting-answer"
        await send(
            engine, ALICE, [channel(channel_id=task.id, sender="alice", text="hey")], task.id
        )
        await agents.wait(1)
        await settled(task, engine.store)
        assert [(who, m.parts[-1].data["text"]) for who, m in agents.got] == [("helper", "hey")]
        assert TASK_KEY in (await engine.get_task(task.id, ALICE)).metadata


async def test_a_participant_cannot_have_its_message_delivered_by_naming_recipients() -> None:
    async with with_agents(asking(Recorder()), "helper") as (engine, _, agents):
        task = await send(engine, ALICE, team())
        forged = Message(
            message_id="m-forged",
            role=Role.USER,
            parts=[Part(text="to the agents, please")],
            task_id=task.id,
            metadata={"accord.harness/deliver_to": ["helper"]},
        )
        await engine.send_message(SendMessageRequest(message=forged), ALICE)
        await send(
            engine, ALICE, [channel(channel_id=task.id, sender="alice", text="real")], task.id
        )
        await agents.wait(1)
        await settled(task, engine.store)
        assert [m.parts[-1].data["text"] for m in agents.of("helper")] == ["real"]


async def test_a_message_a_hook_refuses_is_relayed_and_delivered_to_nobody() -> None:
    """``message.received`` and ``channel.received`` judge a channel message before anyone
    is given it: refused, no agent member is sent it, no relay shows it to people, the model
    never reads it, and its sender is told; the message let through next goes everywhere.
    ``message.received`` judges it before it is stored: nothing of it is kept."""
    recorder = Recorder()
    ops = {"channel_id": "ops", "members": ["alice", "helper", "accord"]}

    def setup(agent: HarnessAgent) -> None:
        @agent.hooks.on("message.received.pre")
        def no_card_numbers(point: str, context: MessageReceived) -> MessageReceived:
            text = json.dumps(context.message["parts"])
            if "4111" in text:
                raise HookAbort("no card numbers", "policy")
            if "shh" in text:  # (the model reads a replacement; people the message as sent)
                part = context.message["parts"][0]
                hushed = {**part, "data": {**part["data"], "text": "lunch at noon"}}
                return msgspec.structs.replace(
                    context, message={**context.message, "parts": [hushed]}
                )
            return context

        @agent.hooks.on("channel.received.pre")
        def no_secrets(point: str, context: ChannelReceived) -> None:
            if "secret" in context.text:
                raise HookAbort("no secrets on channels", "policy")

    async with with_agents(asking(recorder), "helper", "scout", setup=setup) as (
        engine,
        _,
        agents,
    ):
        task = await send(engine, ALICE, team(ops))
        calls = len(recorder.seen)
        card = channel(channel_id=task.id, sender="alice", text="card 4111 1111")
        with pytest.raises(A2AError) as turned_away:
            await send(engine, ALICE, [card], task.id)
        assert turned_away.value.message == "message not accepted: no card numbers"
        secret = channel(channel_id="ops", sender="alice", text="the secret plan")
        refused = await send(engine, ALICE, [secret], task.id)
        assert said(refused) == "message not accepted: no secrets on channels"
        assert len(recorder.seen) == calls  # no turn for either
        fine = channel(channel_id=task.id, sender="alice", text="lunch at noon, shh")
        task = await send(engine, ALICE, [fine], task.id)
        await agents.wait(2)
        await settled(task, engine.store)
        await asyncio.sleep(0.2)  # a window: anything more the outbox would send has its chance
        # Only the message let through reached the agents, each once.
        assert sorted((w, m.parts[-1].data["text"]) for w, m in agents.got) == [
            ("helper", "lunch at noon, shh"),
            ("scout", "lunch at noon, shh"),
        ]
        rows = await channel_outbox(engine.store).deliveries(task.id)
        assert len(rows) == 2
        # People: the message message.received refused was never stored; the one
        # channel.received refused is recorded as sent (it judges after the message is
        # stored), and no status message of the task repeats it.
        task = await engine.get_task(task.id, ALICE)
        assert "4111" not in str(to_builtins(task))
        relays = [m for m in task.history if m.role is Role.AGENT and m.parts and m.text()]
        assert not any("secret plan" in m.text() for m in relays)
        assert any(m.text() == "alice: lunch at noon, shh" for m in relays)
        # The model read neither refused message, and the replacement of the third.
        assert recorder.last_users[-1] == "lunch at noon"
        assert not any("4111" in t or "secret" in t for c in recorder.seen for t in _users(c))


def _users(conversation: Conversation) -> list[str]:
    return [entry.text for entry in conversation.entries if entry.role == "user"]
