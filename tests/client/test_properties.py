"""Property tests: the SSE parser under any chunking, the resume tracker under any break."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from accord.client._resume import StreamTracker
from accord.client._sse import ServerSentEvent, SSEParser
from accord.wire._model import (
    Artifact,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

# --- SSE ---------------------------------------------------------------------------------------

line_text = st.text(
    alphabet=st.characters(blacklist_characters="\r\n\x00", blacklist_categories=["Cs"]),
    max_size=12,
)
sse_event = st.builds(
    ServerSentEvent,
    data=st.lists(line_text, min_size=1, max_size=3).map("\n".join),
    event=st.sampled_from(["message", "error", "custom"]),
    id=st.sampled_from(["", "1", "42", "abc"]),
)


def serialize(events: list[ServerSentEvent], newline: str, comments: bool) -> str:
    out = []
    last_id = ""
    for event in events:
        if comments:
            out.append(": keep-alive" + newline)
        if event.id != last_id:
            out.append(f"id: {event.id}{newline}")
            last_id = event.id
        if event.event != "message":
            out.append(f"event: {event.event}{newline}")
        for line in event.data.split("\n"):
            out.append(f"data: {line}{newline}")
        out.append(newline)
    return "".join(out)


@settings(max_examples=200, deadline=None)
@given(
    events=st.lists(sse_event, max_size=6),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    comments=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def test_sse_parser_is_independent_of_chunking(
    events: list[ServerSentEvent], newline: str, comments: bool, cuts: list[int]
) -> None:
    data = serialize(events, newline, comments).encode()
    points = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    parser = SSEParser()
    parsed: list[ServerSentEvent] = []
    for start, end in itertools.pairwise(points):
        parsed.extend(parser.feed(data[start:end]))
    parsed.extend(parser.close())
    assert parsed == events


# --- the resume tracker ------------------------------------------------------------------------

TASK_ID, CONTEXT_ID = "t", "c"


def ts(n: int) -> str:
    return f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z"


@st.composite
def task_streams(draw: st.DrawFn) -> list[StreamResponse]:
    """A task's events: the Task, then statuses (distinct timestamps) and artifact chunks."""
    events = [
        StreamResponse(
            task=Task(
                id=TASK_ID, context_id=CONTEXT_ID, status=TaskStatus(state=TaskState.SUBMITTED)
            )
        )
    ]
    clock = 0
    started: set[str] = set()
    for _ in range(draw(st.integers(min_value=1, max_value=10))):
        if draw(st.booleans()):
            clock += 1
            state = draw(st.sampled_from([TaskState.WORKING, TaskState.INPUT_REQUIRED]))
            status = TaskStatus(state=state, timestamp=ts(clock))
            events.append(
                StreamResponse(
                    status_update=TaskStatusUpdateEvent(
                        task_id=TASK_ID, context_id=CONTEXT_ID, status=status
                    )
                )
            )
        else:
            artifact_id = draw(st.sampled_from(["a1", "a2"]))
            text = draw(st.sampled_from([".", "x", "y"]))  # repeats on purpose
            append = artifact_id in started and draw(st.booleans())
            started.add(artifact_id)
            events.append(
                StreamResponse(
                    artifact_update=TaskArtifactUpdateEvent(
                        task_id=TASK_ID,
                        context_id=CONTEXT_ID,
                        artifact=Artifact(artifact_id=artifact_id, parts=[Part(text=text)]),
                        append=append,
                    )
                )
            )
    clock += 1
    final = TaskStatus(state=TaskState.COMPLETED, timestamp=ts(clock))
    events.append(
        StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id=TASK_ID, context_id=CONTEXT_ID, status=final
            )
        )
    )
    return events


@dataclass
class Folded:
    """What a caller knows after a sequence of events."""

    state: str = ""
    artifacts: dict[str, list[str]] = field(default_factory=dict)

    def apply(self, event: StreamResponse) -> None:
        if isinstance(event.task, Task):
            self.state = str(event.task.status.state)
            for artifact in event.task.artifacts:
                self.artifacts[artifact.artifact_id] = [str(p.text) for p in artifact.parts]
        elif isinstance(event.status_update, TaskStatusUpdateEvent):
            self.state = str(event.status_update.status.state)
        elif isinstance(event.artifact_update, TaskArtifactUpdateEvent):
            update = event.artifact_update
            texts = [str(p.text) for p in update.artifact.parts]
            have = self.artifacts.get(update.artifact.artifact_id, [])
            self.artifacts[update.artifact.artifact_id] = have + texts if update.append else texts


def fold(events: list[StreamResponse]) -> Folded:
    folded = Folded()
    for event in events:
        folded.apply(event)
    return folded


def snapshot(events: list[StreamResponse]) -> StreamResponse:
    """The Task a server would show after ``events``."""
    folded = fold(events)
    last_status = TaskStatus(state=TaskState.SUBMITTED)
    for event in events:
        if isinstance(event.status_update, TaskStatusUpdateEvent):
            last_status = event.status_update.status
    return StreamResponse(
        task=Task(
            id=TASK_ID,
            context_id=CONTEXT_ID,
            status=last_status,
            artifacts=[
                Artifact(artifact_id=aid, parts=[Part(text=t) for t in texts])
                for aid, texts in folded.artifacts.items()
            ],
        )
    )


def run(tracker: StreamTracker, events: list[StreamResponse]) -> list[StreamResponse]:
    return [out for event in events for out in tracker.accept(event)]


@settings(max_examples=300, deadline=None)
@given(events=task_streams(), data=st.data())
def test_resume_by_id_yields_every_event_once(
    events: list[StreamResponse], data: st.DataObject
) -> None:
    k = data.draw(st.integers(min_value=1, max_value=len(events)))
    tracker = StreamTracker()
    seen = run(tracker, events[:k])
    tracker.reconnecting(resumed_by_id=True)
    seen += run(tracker, events[k:])
    assert seen == events


@settings(max_examples=300, deadline=None)
@given(events=task_streams(), data=st.data())
def test_replay_from_the_start_yields_every_event_once(
    events: list[StreamResponse], data: st.DataObject
) -> None:
    k = data.draw(st.integers(min_value=1, max_value=len(events)))
    tracker = StreamTracker()
    seen = run(tracker, events[:k])
    tracker.reconnecting(resumed_by_id=False)
    seen += run(tracker, events)
    assert seen == events


@settings(max_examples=300, deadline=None)
@given(events=task_streams(), data=st.data())
def test_snapshot_resubscribe_converges_and_keeps_live_events(
    events: list[StreamResponse], data: st.DataObject
) -> None:
    k = data.draw(st.integers(min_value=1, max_value=len(events) - 1))
    j = data.draw(st.integers(min_value=k, max_value=len(events) - 1))  # events k..j-1 are missed
    tracker = StreamTracker()
    seen = run(tracker, events[:k])
    tracker.reconnecting(resumed_by_id=False)
    gap = run(tracker, [snapshot(events[:j])])
    live = run(tracker, events[j:])
    assert live == events[j:]  # nothing after the snapshot is lost or repeated
    assert fold(seen + gap + live) == fold(events)  # and the caller ends where the task is
    assert len(gap) <= len(events[k:j])  # one event per artifact or status that changed
