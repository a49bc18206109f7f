"""Channels and help requests on an in-memory engine: who may send where (the membership
boundary), what a channel message does (a turn on the default channel only), help requests
and their replies (plain text from a human addressee, a wrong participant, a second reply,
two open requests answered in reverse order), what the model reads, channels an admin opens
(task envelope and Python API), the hooks' refusals, and the card."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
from tests.harness.channel_kit import asking, channel
from tests.harness.engine_kit import (
    ALICE,
    BOB,
    CAROL,
    Recorder,
    brief,
    envelope,
    running,
    said,
    send,
    sub_state,
)
from tests.waiting import until

from accord.agents._api import RequestContext, TaskHandle
from accord.core._caller import Caller
from accord.engine import Engine
from accord.harness import HarnessAgent, HarnessSettings
from accord.harness._moves import Who
from accord.harness._wire import CHANNEL_MEDIA_TYPE, CHANNEL_URI
from accord.harness.channels._desk import ChannelError
from accord.harness.channels._state import CHANNELS_KEY, Channel
from accord.harness.hooks import HookAbort
from accord.harness.models import FunctionModel
from accord.store._memory import MemoryStore
from accord.wire._errors import A2AError, ErrorKind
from accord.wire._model import Message, Task, TaskState, TaskStatusUpdateEvent

MALLORY = Caller(participant="mallory")
TEAM = {"alice": "admin", "bob": "watcher", "carol": "reporter"}
HELP = "accord.harness/help"


def reply(task: Task, sender: str, text: str, in_reply_to: str | None = None, **more: Any) -> Any:
    fields = {"kind": "help_reply", "text": text, **more}
    if in_reply_to is not None:
        fields["in_reply_to"] = in_reply_to
    return channel(channel_id=task.id, sender=sender, **fields)


def briefed_with(*channels: dict[str, Any], roles: dict[str, str] = TEAM) -> list[Any]:
    """A brief of ``roles`` opening ``channels``."""
    parts = brief(roles)
    parts[1].data["payload"]["channels"] = list(channels)
    return parts


def setting(**payload: Any) -> list[Any]:
    """A task envelope changing the task (``channels=[…]``, ``participants=[…]``)."""
    return [envelope({"kind": "task", "payload": payload})]


def help_requests(task: Task) -> list[Message]:
    return [m for m in task.history if isinstance(m.metadata, dict) and HELP in m.metadata]


def request_of(task: Task) -> Message:
    message = task.status.message
    assert isinstance(message, Message)
    return message


def body(error: A2AError, *ids: str) -> Any:
    """The error as a client gets it, the ids in it replaced."""
    text = msgspec.json.encode(
        {"kind": error.kind.name, "message": error.message, "metadata": error.metadata,
         "violations": [(v.field, v.description) for v in error.violations]}
    ).decode()  # fmt: skip
    for value in ids:
        text = text.replace(value, "ID")
    return text


@asynccontextmanager
async def bob_asked() -> AsyncIterator[tuple[Engine, Recorder, Task, Message]]:
    """A conversation of TEAM in which the harness asked bob "Which venue?"."""
    recorder = Recorder()
    async with running(model=asking(recorder)) as (engine, _):
        task = await send(engine, ALICE, brief(TEAM))
        request = request_of(await send(engine, ALICE, "ask bob Which venue?", task.id))
        yield engine, recorder, task, request


# --- the boundary ---------------------------------------------------------------------------


async def test_a_non_member_an_unknown_channel_and_an_unknown_task_get_the_same_error() -> None:
    ops = {"channel_id": "ops", "members": ["alice", "bob"]}
    async with running() as (engine, _):
        task = await send(engine, ALICE, briefed_with(ops))
        errors = []
        attempts = [
            (CAROL, "ops", task.id),  # a participant, not in the channel
            (CAROL, "nope", task.id),  # a channel the task does not have
            (MALLORY, task.id, task.id),  # not a participant at all
            (MALLORY, "ops", task.id),
            (CAROL, "ops", "no-such-task"),  # a task that does not exist
        ]
        for caller, channel_id, task_id in attempts:
            with pytest.raises(A2AError) as refused:
                part = channel(channel_id=channel_id, sender=caller.participant, text="x")
                await send(engine, caller, [part], task_id)
            errors.append(body(refused.value, task.id, "no-such-task"))
        assert len(set(errors)) == 1 and "TASK_NOT_FOUND" in errors[0]
        # bob may: he is in ops; alice's task shows nothing of the refusals.
        await send(engine, BOB, [channel(channel_id="ops", sender="bob", text="ok")], task.id)
        history = (await engine.get_task(task.id, ALICE)).history
        assert len(history) == 4 and history[-1].parts[0].text == "[ops] bob: ok"


async def test_the_channel_part_names_its_sender_the_sender_it_comes_from() -> None:
    async with running() as (engine, _):
        task = await send(engine, ALICE, brief(TEAM))
        with pytest.raises(A2AError) as refused:
            await send(
                engine, BOB, [channel(channel_id=task.id, sender="alice", text="x")], task.id
            )
        assert refused.value.kind is ErrorKind.PERMISSION_DENIED
        assert refused.value.violations[0].field == "message.parts[0].data.sender"
        assert "names 'alice', but the message comes from 'bob'" in refused.value.message


async def test_a_channel_part_needs_a_task_and_no_event_envelope_beside_it() -> None:
    async with running() as (engine, _):
        with pytest.raises(A2AError) as refused:
            await send(engine, ALICE, [channel(channel_id="c", sender="alice")])
        assert refused.value.kind is ErrorKind.TASK_NOT_FOUND
        task = await send(engine, ALICE, brief(TEAM))
        parts = [
            channel(channel_id=task.id, sender="alice"),
            envelope({"kind": "control", "action": "complete"}),
        ]
        with pytest.raises(A2AError) as refused:
            await send(engine, ALICE, parts, task.id)
        assert refused.value.violations[0].field == "message.parts[0]"


# --- what a channel message does --------------------------------------------------------------


async def test_a_message_on_the_default_channel_starts_a_turn_and_another_channel_does_not() -> (
    None
):
    recorder = Recorder()
    ops = {"channel_id": "ops", "members": ["alice", "bob", "accord"]}
    quiet = {"channel_id": "quiet", "members": ["alice", "bob"]}
    async with running(model=recorder) as (engine, _):
        task = await send(
            engine, ALICE, briefed_with(ops, quiet, roles={**TEAM, "accord": "assignee"})
        )
        calls = len(recorder.seen)
        after = await send(
            engine, BOB, [channel(channel_id="ops", sender="bob", text="psst")], task.id
        )
        assert len(recorder.seen) == calls  # no turn
        assert after.status.state is TaskState.INPUT_REQUIRED
        assert said(after) == "[ops] bob: psst"  # relayed, in the unchanged state
        assert sub_state(after) == "awaiting-next-message"
        await send(engine, BOB, [channel(channel_id="quiet", sender="bob", text="shh")], task.id)
        after = await send(
            engine, BOB, [channel(channel_id=task.id, sender="bob", text="hi")], task.id
        )
        assert len(recorder.seen) == calls + 1
        # The model read ops (the harness is in it), not quiet, and the default one plainly.
        assert recorder.last_users[-2:] == ["[on channel ops] psst", "hi"]
        assert said(after).endswith("| [on channel ops] psst | hi")


async def test_participants_see_channel_messages_on_their_streams() -> None:
    ops = {"channel_id": "ops", "members": ["alice", "bob"]}
    async with running() as (engine, _):
        task = await send(engine, ALICE, briefed_with(ops))
        stream = await engine.subscribe(task.id, BOB)
        seen: list[Any] = []

        async def read() -> None:
            async for item in stream:
                if item is not None:
                    seen.append(item.response)
                    update = item.response.status_update
                    # (past the task's log replayed after the Task: the relay, live)
                    if (
                        isinstance(update, TaskStatusUpdateEvent)
                        and update.status.message
                        and update.status.message.parts[0].text == "[ops] alice: hello"
                    ):
                        return

        reading = asyncio.ensure_future(read())
        await asyncio.sleep(0)
        await send(
            engine, ALICE, [channel(channel_id="ops", sender="alice", text="hello")], task.id
        )
        async with asyncio.timeout(5):
            await reading
        relay = seen[-1].status_update.status.message
        assert relay.parts[0].text == "[ops] alice: hello"
        assert relay.parts[1].media_type == CHANNEL_MEDIA_TYPE
        assert relay.parts[1].data["sender"] == "alice"


# --- help requests and their replies ---------------------------------------------------------


async def test_a_human_addressee_answering_with_plain_text_resumes_the_task() -> None:
    recorder = Recorder()
    async with running(model=asking(recorder)) as (engine, _):
        task = await send(engine, ALICE, brief(TEAM))
        task = await send(engine, ALICE, "ask bob Which venue? | A | B", task.id)
        request = request_of(task)
        assert task.status.state is TaskState.INPUT_REQUIRED
        assert sub_state(task) == "awaiting-answer"
        assert request.parts[0].text == "@bob Which venue?\nOptions: A, B"  # the addressee
        assert request.metadata["accord.harness/help"] == {"to": "bob", "options": ["A", "B"]}
        assert request.parts[1].data == {
            "channel_id": task.id, "sender": "accord", "kind": "help_request",
            "text": "Which venue?", "parts": [], "in_reply_to": None,
        }  # fmt: skip
        task = await send(engine, BOB, "A, definitely", task.id)  # as tiny-harness clients do
        assert sub_state(task) == "awaiting-next-message"
        assert recorder.last_users[-1] == 'Reply from bob to "Which venue?": A, definitely'
        state = task.metadata[CHANNELS_KEY]["requests"][0]
        assert state["answered_by"] == task.history[-2].message_id  # bob's message


async def test_a_reply_from_another_participant_is_recorded_and_its_sender_told() -> None:
    async with bob_asked() as (engine, recorder, task, request):
        calls = len(recorder.seen)
        told = await send(engine, CAROL, [reply(task, "carol", "B", request.message_id)], task.id)
        assert len(recorder.seen) == calls  # no turn
        assert told.status.state is TaskState.INPUT_REQUIRED
        assert sub_state(told) == "awaiting-answer"  # still bob's to answer
        assert said(told) == (
            f"the help request {request.message_id} was addressed to bob; your reply is recorded"
        )
        # Carol's plain message is an ordinary message: a turn, the request still open.
        chatted = await send(engine, CAROL, "what about C?", task.id)
        assert len(recorder.seen) == calls + 1 and sub_state(chatted) == "awaiting-answer"
        answered = await send(engine, BOB, [reply(task, "bob", "A", request.message_id)], task.id)
        assert sub_state(answered) == "awaiting-next-message"
        assert recorder.last_users[-3:] == [
            '[help reply from carol, not the answer to "Which venue?"] B',
            "what about C?",
            'Reply from bob to "Which venue?": A',
        ]


async def test_a_second_reply_to_an_answered_request_is_recorded_and_its_sender_told() -> None:
    async with bob_asked() as (engine, recorder, task, request):
        await send(engine, BOB, [reply(task, "bob", "A", request.message_id)], task.id)
        calls = len(recorder.seen)
        again = await send(engine, BOB, [reply(task, "bob", "no, B", request.message_id)], task.id)
        assert len(recorder.seen) == calls
        assert said(again) == (
            f"the help request {request.message_id} was answered already; your reply is recorded"
        )
        assert sub_state(again) == "awaiting-next-message"
        # A reply naming no request of the task, or with no open one to answer, likewise.
        unknown = await send(engine, BOB, [reply(task, "bob", "?", "nothing-1")], task.id)
        assert said(unknown) == "no help request nothing-1 on this task; your reply is recorded"
        none = await send(engine, BOB, [reply(task, "bob", "?")], task.id)
        assert said(none) == "no help request is waiting for your answer; your reply is recorded"
        assert len(recorder.seen) == calls


async def test_two_open_requests_answered_in_reverse_order_each_resume_on_their_own() -> None:
    recorder = Recorder()
    async with running(model=asking(recorder)) as (engine, _):
        task = await send(engine, ALICE, brief(TEAM))
        to_bob = request_of(await send(engine, ALICE, "ask bob Which venue?", task.id))
        to_carol = request_of(await send(engine, ALICE, "ask carol Which date?", task.id))
        task = await send(engine, CAROL, [reply(task, "carol", "June 3")], task.id)  # (no id:
        # her one open request)
        assert recorder.last_users[-1] == 'Reply from carol to "Which date?": June 3'
        assert sub_state(task) == "awaiting-answer"  # bob's is still open
        task = await send(engine, BOB, [reply(task, "bob", "A", to_bob.message_id)], task.id)
        assert recorder.last_users[-1] == 'Reply from bob to "Which venue?": A'
        assert sub_state(task) == "awaiting-next-message"
        requests = {r["id"]: r for r in task.metadata[CHANNELS_KEY]["requests"]}
        assert requests[to_bob.message_id]["answered_by"] is not None
        assert requests[to_carol.message_id]["answered_by"] is not None


async def test_one_answer_may_ask_several_participants_and_a_bad_ask_is_an_error_result() -> None:
    from accord.harness._transcript import ToolResult
    from accord.harness.channels._tool import ASK_PARTICIPANT
    from accord.harness.models import ModelResponse, ToolCall

    results: list[ToolResult] = []

    async def model(conversation: Any) -> Any:
        if conversation.steps:  # the model reads its calls' results
            results.extend(s for s in conversation.steps if isinstance(s, ToolResult))
            return "then not"
        if conversation.text == "ask all":
            calls = [
                ToolCall(ASK_PARTICIPANT, {"participant_id": "bob", "question": "Venue?"}),
                ToolCall(ASK_PARTICIPANT, {"participant_id": "zed", "question": "Budget?"}),
                ToolCall(ASK_PARTICIPANT, {"participant_id": "carol", "question": "Date?"}),
            ]
            return ModelResponse(text="Let me ask.", tool_calls=tuple(calls))
        if conversation.text == "ask nobody":
            calls = [ToolCall(ASK_PARTICIPANT, {"participant_id": "bob", "question": ""})]
            return ModelResponse(text="", tool_calls=tuple(calls))
        return "ok"

    async with running(model=model) as (engine, _):
        task = await send(engine, ALICE, brief(TEAM))
        parked = await send(engine, ALICE, "ask all", task.id)
        assert said(parked) == "@bob Venue?" and sub_state(parked) == "awaiting-answer"

        async def asked_twice() -> Task | None:  # (the further questions follow the parking)
            got = await engine.get_task(task.id, ALICE)
            return got if len(help_requests(got)) >= 2 else None

        task = await until(asked_twice, "the further questions")
        assert [m.parts[0].text for m in help_requests(task)] == ["@bob Venue?", "@carol Date?"]
        assert sub_state(task) == "awaiting-answer"
        assert results == []  # the turn ended with the questions: no model call after them
        task = await send(engine, BOB, "A", task.id)
        task = await send(engine, CAROL, "June", task.id)
        assert sub_state(task) == "awaiting-next-message"
        # A call that cannot be asked is an error result the model reads; the turn goes on.
        task = await send(engine, ALICE, "ask nobody", task.id)
        assert [(r.content, r.error) for r in results] == [
            ("not asked: ask_participant: question must be a non-empty string", True)
        ]
        assert said(task) == "then not" and sub_state(task) == "awaiting-next-message"


# --- channels an admin opens ---------------------------------------------------------------------


async def test_an_admin_opens_and_changes_channels_with_a_task_envelope() -> None:
    async with running() as (engine, _):
        task = await send(engine, ALICE, brief(TEAM))
        ops = {"channel_id": "ops", "members": ["alice", "carol"]}
        with pytest.raises(A2AError) as refused:  # carol is no admin
            await send(engine, CAROL, setting(channels=[ops]), task.id)
        assert refused.value.kind is ErrorKind.UNSUPPORTED_OPERATION
        stranger = {"channel_id": "ops", "members": ["alice", "zed"]}
        with pytest.raises(A2AError) as refused:
            await send(engine, ALICE, setting(channels=[stranger]), task.id)
        assert refused.value.violations[0].field == (
            "message.parts[0].data.payload.channels[0].members[1]"
        )
        own = {"channel_id": task.id, "members": ["alice"]}
        with pytest.raises(A2AError) as refused:
            await send(engine, ALICE, setting(channels=[own]), task.id)
        assert refused.value.violations[0].field.endswith("channels[0].channel_id")
        task = await send(engine, ALICE, setting(channels=[ops]), task.id)
        assert task.metadata[CHANNELS_KEY]["channels"] == [ops]
        await send(engine, CAROL, [channel(channel_id="ops", sender="carol", text="in")], task.id)
        # carol leaves the task: she is no member of ops any more.
        people = [
            {"id": "alice", "kind": "human", "role": "admin"},
            {"id": "accord", "kind": "agent", "role": "assignee"},
        ]
        await send(engine, ALICE, setting(participants=people), task.id)
        with pytest.raises(A2AError) as refused:
            await send(
                engine, CAROL, [channel(channel_id="ops", sender="carol", text="x")], task.id
            )
        assert refused.value.kind is ErrorKind.TASK_NOT_FOUND
        still = await send(
            engine, ALICE, [channel(channel_id="ops", sender="alice", text="y")], task.id
        )
        assert said(still) == "[ops] alice: y"
        # Closing: the channels listed are all the task's further channels.
        task = await send(engine, ALICE, setting(channels=[]), task.id)
        assert CHANNELS_KEY not in task.metadata
        with pytest.raises(A2AError) as refused:
            await send(
                engine, ALICE, [channel(channel_id="ops", sender="alice", text="z")], task.id
            )
        assert refused.value.kind is ErrorKind.TASK_NOT_FOUND


class Organiser(HarnessAgent):
    """A harness whose author opens channels and sends on them from Python (before the
    turn runs): ``open ops`` / ``close ops`` / ``say <text>`` / ``stranger``."""

    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None:
        who = Who("alice", None, ctx.message.message_id)
        text = ctx.message.text()
        await task.start_working()  # (in the turn: a change while parked would end it)
        if text == "open ops":
            await self.channels.open_channel(task, who, "ops", ["alice", "bob", "accord"])
        elif text == "close ops":
            await self.channels.close_channel(task, who, "ops")
        elif text.startswith("say "):
            await self.channels.send(task, who, text[4:], channel_id="ops")
        elif text == "stranger":
            with pytest.raises(ChannelError, match="participants"):
                await self.channels.set_channels(
                    task, who, [Channel(channel_id="x", members=("zed",))]
                )
        await super().execute(ctx, task)


async def test_channels_opened_changed_and_used_through_the_python_api() -> None:
    recorder = Recorder()
    agent = Organiser(HarnessSettings(model="main"), {"main": FunctionModel(recorder)})
    engine = Engine(MemoryStore(), agent)
    await engine.start()
    try:
        task = await send(engine, ALICE, brief(TEAM))
        task = await send(engine, ALICE, "open ops", task.id)
        assert task.metadata[CHANNELS_KEY]["channels"] == [
            {"channel_id": "ops", "members": ["alice", "bob", "accord"]}
        ]
        await send(engine, ALICE, "say lunch at noon", task.id)
        task = await engine.get_task(task.id, ALICE)
        sent = next(m for m in task.history if m.parts[0].text == "lunch at noon")
        assert sent.parts[1].data["channel_id"] == "ops"
        assert sent.parts[1].data["sender"] == "accord"
        assert ("accord", "[on channel ops] lunch at noon") in [
            (e.sender, e.text) for e in recorder.seen[-1].entries
        ]
        await send(engine, BOB, [channel(channel_id="ops", sender="bob", text="ok")], task.id)
        await send(engine, ALICE, "stranger", task.id)
        task = await send(engine, ALICE, "close ops", task.id)
        assert CHANNELS_KEY not in task.metadata
        with pytest.raises(A2AError) as refused:
            await send(engine, BOB, [channel(channel_id="ops", sender="bob", text="?")], task.id)
        assert refused.value.kind is ErrorKind.TASK_NOT_FOUND
    finally:
        await engine.stop()


# --- hooks ------------------------------------------------------------------------------------


async def test_hooks_may_refuse_what_reaches_the_harness_and_change_what_it_asks() -> None:
    recorder = Recorder()

    def setup(agent: HarnessAgent) -> None:
        @agent.hooks.on("channel.received.pre")
        def no_secrets(point: str, context: Any) -> None:
            if "secret" in context.text:
                raise HookAbort("no secrets on channels", "policy")

        @agent.hooks.on("help.requested.pre")
        def politely(point: str, context: Any) -> Any:
            if context.question == "forbidden?":
                raise HookAbort("not that question", "policy")
            return msgspec.structs.replace(context, question=context.question + " please")

        @agent.hooks.on("help.answered.pre")
        def no_maybe(point: str, context: Any) -> None:
            if context.reply == "maybe":
                raise HookAbort("an answer, please", "refused")

    async with running(model=asking(recorder), setup=setup) as (engine, _):
        task = await send(engine, ALICE, brief(TEAM))
        calls = len(recorder.seen)
        secret = channel(channel_id=task.id, sender="bob", text="a secret")
        refused = await send(engine, BOB, [secret], task.id)
        assert len(recorder.seen) == calls  # no turn, and the model never reads it
        assert said(refused) == "message not accepted: no secrets on channels"
        # Recorded as sent (it was stored before the hooks judged it), relayed to nobody.
        assert refused.history[-2].parts[0].data["text"] == "a secret"
        assert not any("a secret" in (m.text() or "") for m in refused.history)
        task = await send(engine, ALICE, "ask bob Which venue?", task.id)
        assert request_of(task).parts[1].data["text"] == "Which venue? please"
        maybe = await send(engine, BOB, "maybe", task.id)
        assert said(maybe) == "message not accepted: an answer, please"
        assert sub_state(maybe) == "awaiting-answer"
        task = await send(engine, BOB, "A", task.id)
        assert recorder.last_users[-1] == 'Reply from bob to "Which venue? please": A'
        assert all("secret" not in text and text != "maybe" for text in recorder.last_users)
        task = await send(engine, ALICE, "ask bob forbidden?", task.id)
        assert said(task) == "noted: not asked: help request refused: policy: not that question"
        assert sub_state(task) == "awaiting-next-message"


# --- the card -----------------------------------------------------------------------------------


def test_the_card_lists_the_channel_extension_and_its_media_type() -> None:
    agent = HarnessAgent(HarnessSettings(model="main"), {"main": FunctionModel(Recorder())})
    [listed] = [e for e in agent.card_extensions() if e.uri == CHANNEL_URI]
    assert listed.required is False
    assert CHANNEL_MEDIA_TYPE in agent.input_modes and CHANNEL_MEDIA_TYPE in agent.output_modes


async def test_two_replies_at_once_answer_the_request_once() -> None:
    async with bob_asked() as (engine, recorder, task, request):
        calls = len(recorder.seen)
        # Both are judged before either is taken: the second finds the request answered.
        await asyncio.gather(
            send(engine, BOB, [reply(task, "bob", "A", request.message_id)], task.id),
            send(engine, BOB, [reply(task, "bob", "B", request.message_id)], task.id),
        )
        final = await engine.get_task(task.id, ALICE)
        assert len(recorder.seen) == calls + 1  # one resumption
        told = [
            m.parts[0].text
            for m in final.history
            if m.parts[0].text and "already" in m.parts[0].text
        ]
        assert told == [
            f"the help request {request.message_id} was answered already; your reply is recorded"
        ]
        answered = final.metadata[CHANNELS_KEY]["requests"][0]["answered_by"]
        assert answered in {
            m.message_id
            for m in final.history
            if isinstance(m.metadata, dict) and m.metadata.get("participant_id") == "bob"
        }
