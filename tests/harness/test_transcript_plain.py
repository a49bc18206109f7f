"""The transcript's plain path (``_transcript._plain_entries``): a conversation of plain text
reads the same on it as on the general path, for every shape of history a generator can
build from the parts and marks the general path reads; and the shapes the plain path
cannot read leave it (it answers None, the general path reads them)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.harness.engine_kit import ALICE, running, send

from accord.harness import Conversation
from accord.harness import _transcript as transcript
from accord.harness._step_events import STEP_MEDIA_TYPE
from accord.harness._usage import USAGE_KEY
from accord.harness._wire import (
    CHANNEL_MEDIA_TYPE,
    COMMAND_METADATA,
    EVENT_MEDIA_TYPE,
    PARTICIPANT_METADATA,
)
from accord.harness.channels._decisions import HELP_KEY, NOTE_KEY
from accord.harness.channels._judge import OWED_KEY, OWED_TURN
from accord.harness.channels._state import CHANNELS_KEY
from accord.harness.core._delegation import TOLD_KEY
from accord.harness.core._state import MODEL_FAILURE_KEY, RECEIVED_KEY
from accord.harness.models import ModelResponse, Usage
from accord.wire import UNSET
from accord.wire._model import Message, Part, Role, Task, TaskState, TaskStatus

AGENT = "harness"
TASK = "t1"

# Every part shape the general path reads differently.
PARTS: dict[str, Part] = {
    "text": Part(text="hello"),
    "text2": Part(text="second line"),
    "empty": Part(text=""),
    "markdown": Part(text="**bold**", media_type="text/markdown"),
    "text-step-type": Part(text="a text part typed as a step", media_type=STEP_MEDIA_TYPE),
    "step": Part(data={"kind": "model_call", "turn": "x", "step": 0}, media_type=STEP_MEDIA_TYPE),
    "data": Part(data={"k": [1, 2]}),
    "file": Part(url="https://example.com/a.pdf", filename="a.pdf", media_type="application/pdf"),
    "raw": Part(raw=b"\x89PNG", media_type="image/png"),
    "envelope": Part(
        data={"kind": "control", "action": "pause", "version": 1}, media_type=EVENT_MEDIA_TYPE
    ),
    "channel": Part(
        data={"channel_id": TASK, "sender": "bob", "text": "on the task's channel"},
        media_type=CHANNEL_MEDIA_TYPE,
    ),
    "side-channel": Part(
        data={"channel_id": "ops", "sender": "bob", "kind": "help_reply", "text": "B"},
        media_type=CHANNEL_MEDIA_TYPE,
    ),
}

# Every mark shape the general path reads a message by, and some it does not.
MARKS: dict[str, tuple[Any, Any]] = {
    "sender": (PARTICIPANT_METADATA, "alice"),
    "other-sender": (PARTICIPANT_METADATA, "bob"),
    "self-sender": (PARTICIPANT_METADATA, AGENT),
    "empty-sender": (PARTICIPANT_METADATA, ""),
    "odd-sender": (PARTICIPANT_METADATA, 7),
    "model-call": (transcript.MODEL_CALL_KEY, 3),
    "usage": (USAGE_KEY, {"input_tokens": 1, "output_tokens": 2, "cached_tokens": 0}),
    "after": ("accord.core/after", 2),
    "client": ("x-trace", "abc"),
    "odd-key": (7, "a metadata key not a string (built in Python, never decoded)"),
    "owed-turn": (OWED_KEY, OWED_TURN),
    "owed": (OWED_KEY, True),
    "owed-odd": (OWED_KEY, "later"),
    "owed-none": (OWED_KEY, None),
    "command": (COMMAND_METADATA, "status"),
    "received": (RECEIVED_KEY, {"refused": "m1"}),
    "model-failure": (MODEL_FAILURE_KEY, {"error": "boom"}),
    "told": (TOLD_KEY, {"task_id": "child"}),
    "note": (NOTE_KEY, {"relay": "m1"}),
    "help": (HELP_KEY, {"to": "bob", "options": ["A", "B"]}),
    "unknown-mark": ("accord.harness/something_new", 1),
}

# Task metadata shapes: a compaction's summary, hooks' judgements, channel state.
TASK_MARKS: dict[str, tuple[Any, Any]] = {
    "summary": (transcript.SUMMARY_KEY, {"upto": 2, "text": "earlier"}),
    "summary-far": (transcript.SUMMARY_KEY, {"upto": 99, "text": "all of it"}),
    "summary-negative": (transcript.SUMMARY_KEY, {"upto": -2, "text": "odd"}),
    "summary-odd": (transcript.SUMMARY_KEY, {"upto": "2"}),
    "received": (
        RECEIVED_KEY,
        {
            "refused": ["m1"],
            "replaced": {
                "m2": {"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "replaced"}]}
            },
        },
    ),
    "channels": (
        CHANNELS_KEY,
        {
            "requests": [
                {
                    "id": "m0",
                    "channel_id": TASK,
                    "to": "bob",
                    "question": "Which?",
                    "answered_by": "m1",
                }
            ]
        },
    ),
    "client": ("x-task", {"a": 1}),
}

STATES = [TaskState.WORKING, TaskState.INPUT_REQUIRED, TaskState.SUBMITTED, TaskState.COMPLETED]


def message(index: int, role: Role, parts: list[str], marks: list[str]) -> Message:
    metadata = dict(MARKS[name] for name in marks)
    return Message(
        message_id=f"m{index}",
        role=role,
        parts=[PARTS[name] for name in parts],
        task_id=TASK,
        metadata=metadata if metadata else UNSET,
    )


def task(history: list[Message], state: TaskState = TaskState.WORKING, **marks: Any) -> Task:
    return Task(
        id=TASK,
        context_id="c1",
        status=TaskStatus(state=state),
        history=history,
        metadata=marks or UNSET,
    )


def both(task: Task) -> tuple[tuple[transcript.Entry, ...], tuple[transcript.Entry, ...]]:
    return transcript.entries(task, AGENT), transcript.entries(task, AGENT, plain=False)


def conversation(turns: int) -> list[Message]:
    """A conversation as the harness stores it: the first message, then each turn's message
    (owed its turn while parked) and the model's answer."""
    history = [message(0, Role.USER, ["text"], ["sender"])]
    for turn in range(turns):
        history.append(message(2 * turn + 1, Role.AGENT, ["text"], ["model-call", "after"]))
        history.append(message(2 * turn + 2, Role.USER, ["text2"], ["sender", "owed-turn"]))
    return history


# -- the property ------------------------------------------------------------------------

plain_parts = st.lists(
    st.sampled_from(["text", "text2", "empty", "markdown"]), min_size=1, max_size=3
)
any_parts = st.lists(st.sampled_from(sorted(PARTS)), min_size=1, max_size=3)
plain_marks = st.lists(
    st.sampled_from(
        ["sender", "other-sender", "model-call", "usage", "after", "client", "odd-key"]
    ),
    max_size=3,
    unique=True,
)
any_marks = st.lists(st.sampled_from(sorted(MARKS)), max_size=3, unique=True)
roles = st.sampled_from([Role.USER, Role.AGENT])


@st.composite
def histories(draw: st.DrawFn) -> Task:
    """A task whose messages are mostly plain (so the plain path reads many of them to the
    end), each message at times drawn from every part and mark the general path reads."""
    shapes = []
    for _ in range(draw(st.integers(0, 8))):
        odd = draw(st.integers(0, 5)) == 0
        parts = draw(any_parts if odd else plain_parts)
        marks = draw(any_marks if odd else plain_marks)
        shapes.append((draw(roles), parts, marks))
    history = [message(i, role, parts, marks) for i, (role, parts, marks) in enumerate(shapes)]
    chosen = draw(st.lists(st.sampled_from(sorted(TASK_MARKS)), max_size=2, unique=True))
    metadata = dict(TASK_MARKS[name] for name in chosen)
    return task(history, draw(st.sampled_from(STATES)), **metadata)


@settings(max_examples=600, deadline=None)
@given(histories())
def test_the_plain_path_reads_every_history_as_the_general_path(task: Task) -> None:
    plain, general = both(task)
    assert plain == general


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(roles, plain_parts, plain_marks), max_size=10),
    st.sampled_from([TaskState.WORKING, TaskState.SUBMITTED]),
)
def test_a_plain_conversation_takes_the_plain_path(
    shapes: list[tuple[Role, list[str], list[str]]], state: TaskState
) -> None:
    history = [message(i, role, parts, marks) for i, (role, parts, marks) in enumerate(shapes)]
    plain = task(history, state)
    found = transcript._plain_entries(plain, AGENT)
    assert found is not None
    assert found == transcript.entries(plain, AGENT, plain=False)


# -- what takes the plain path -------------------------------------------------------------


def test_a_running_turn_of_a_long_conversation_takes_the_plain_path() -> None:
    running = task(conversation(10))
    found = transcript._plain_entries(running, AGENT)
    assert found is not None
    assert found == transcript.entries(running, AGENT, plain=False)
    assert len(found) == 21
    assert found[0] == transcript.Entry("alice", "user", "hello", 0)
    assert found[1] == transcript.Entry(AGENT, "agent", "hello", 1)
    assert found[-1] == transcript.Entry("alice", "user", "second line", 20)


@pytest.mark.parametrize(
    ("parts", "marks"),
    [
        (["text"], ["command", "sender"]),  # a command: no model reads it
        (["text"], ["command", "unknown-mark"]),  # (read by neither path)
        (["text"], ["received"]),  # a refusal's note
        (["text"], ["model-failure"]),  # a model's failure
        (["step"], ["after"]),  # visible work
        (["text", "step"], []),
    ],
)
def test_messages_no_model_reads_stay_on_the_plain_path(parts: list[str], marks: list[str]) -> None:
    history = conversation(2)
    history.insert(3, message(99, Role.AGENT, parts, marks))
    running = task(history)
    found = transcript._plain_entries(running, AGENT)
    assert found is not None
    assert found == transcript.entries(running, AGENT, plain=False)
    assert [entry.position for entry in found] == [0, 1, 2, 4, 5]


def test_a_compacted_conversation_stays_on_the_plain_path() -> None:
    compacted = task(conversation(3), **dict([TASK_MARKS["summary"]]))
    found = transcript._plain_entries(compacted, AGENT)
    assert found is not None
    assert found == transcript.entries(compacted, AGENT, plain=False)
    assert found[0].text == transcript.SUMMARY_HEAD + "earlier"
    assert [entry.position for entry in found] == [-1, 2, 3, 4, 5, 6]


def test_the_tokens_mark_is_the_usage_modules() -> None:
    assert USAGE_KEY in transcript.PLAIN_MARKS


# -- what leaves it --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "parts", "marks"),
    [
        (Role.USER, ["data"], ["sender"]),
        (Role.USER, ["text", "file"], ["sender"]),
        (Role.USER, ["raw"], ["sender"]),
        (Role.USER, ["envelope"], ["sender"]),
        (Role.USER, ["channel"], ["sender"]),
        (Role.USER, ["side-channel"], ["other-sender"]),
        (Role.USER, ["step"], ["sender"]),  # (only an agent's message is a step event)
        (Role.AGENT, ["data"], ["model-call"]),
        (Role.USER, ["text"], ["told", "self-sender"]),
        (Role.AGENT, ["text"], ["note"]),
        (Role.AGENT, ["text"], ["help"]),
        (Role.USER, ["text"], ["owed"]),
        (Role.USER, ["text"], ["owed-odd"]),
        (Role.USER, ["text"], ["unknown-mark"]),
    ],
)
def test_a_message_the_plain_path_cannot_read_leaves_it(
    role: Role, parts: list[str], marks: list[str]
) -> None:
    history = conversation(2)
    history.append(message(99, role, parts, marks))
    odd = task(history)
    assert transcript._plain_entries(odd, AGENT) is None
    assert transcript.entries(odd, AGENT) == transcript.entries(odd, AGENT, plain=False)


@pytest.mark.parametrize("name", ["received", "channels"])
def test_a_task_hooks_judged_or_with_channels_leaves_it(name: str) -> None:
    odd = task(conversation(2), **dict([TASK_MARKS[name]]))
    assert transcript._plain_entries(odd, AGENT) is None
    assert transcript.entries(odd, AGENT) == transcript.entries(odd, AGENT, plain=False)


def test_a_parked_task_with_a_message_owed_its_turn_leaves_it() -> None:
    """Parked, the newest message is owed its turn still (no model reads it before then)."""
    parked = task(conversation(2), TaskState.INPUT_REQUIRED)
    assert transcript._plain_entries(parked, AGENT) is None
    plain, general = both(parked)
    assert plain == general
    assert [entry.position for entry in plain] == [0, 1, 2, 3]


def test_an_entry_the_plain_path_builds_is_the_dataclass_s() -> None:
    """The plain path builds entries without Entry's ``__init__``: sound while Entry has
    these fields and nothing its ``__init__`` would run besides setting them."""
    assert [field.name for field in dataclasses.fields(transcript.Entry)] == [
        "sender",
        "role",
        "text",
        "position",
        "images",
    ]
    assert not hasattr(transcript.Entry, "__post_init__")
    built = transcript._entry("alice", "user", "hello", 3)
    assert built == transcript.Entry("alice", "user", "hello", 3)
    assert type(built) is transcript.Entry
    assert hash(built) == hash(transcript.Entry("alice", "user", "hello", 3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.text = "changed"  # type: ignore[misc]


async def test_a_conversation_as_the_harness_stores_it_reads_on_the_plain_path() -> None:
    """Each turn's task as the harness stored it (its marks: owed turns, model calls'
    numbers and tokens, answers' places; a command and its reply between) takes the plain
    path, and the model sees what the general path reads."""
    taken: list[bool] = []

    async def model(conversation: Conversation) -> ModelResponse:
        task, agent = conversation.task, conversation.agent_id
        taken.append(transcript._plain_entries(task, agent) is not None)
        assert conversation.entries == transcript.entries(task, agent, plain=False)
        return ModelResponse(text="ok", usage=Usage(3, 1, 0))

    async with running(model=model) as (engine, _agent):
        task = await send(engine, ALICE, "hello")
        for turn in range(3):
            task = await send(engine, ALICE, f"more {turn}", task.id)
        await send(engine, ALICE, "/status", task.id)
        await send(engine, ALICE, "after the command", task.id)
    assert taken == [True] * 5
