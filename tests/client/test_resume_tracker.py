"""Exactly-once delivery across reconnections, without any I/O."""

from __future__ import annotations

from client_events import artifact, chunk, describe, status, task

from accord.client._resume import StreamTracker
from accord.wire._model import Message, Part, Role, StreamResponse, TaskState

S = TaskState


def feed(tracker: StreamTracker, *events: StreamResponse) -> list[str]:
    return [describe(out) for event in events for out in tracker.accept(event)]


FIRST = [task(), status(S.WORKING, 1), chunk("a", append=False), chunk("b")]


def test_first_connection_passes_everything_through() -> None:
    tracker = StreamTracker()
    assert feed(tracker, *FIRST) == [
        "task:TASK_STATE_SUBMITTED",
        "status:TASK_STATE_WORKING",
        "chunk:a1:a",
        "append:a1:b",
    ]
    assert tracker.task_id == "task-1" and not tracker.done


def test_terminal_status_marks_done() -> None:
    tracker = StreamTracker()
    feed(tracker, *FIRST, status(S.COMPLETED, 3))
    assert tracker.done


def test_a_continuation_turn_ends_at_its_own_interruption_not_the_one_it_opens_with() -> None:
    tracker = StreamTracker()
    feed(tracker, task(S.INPUT_REQUIRED, at=1), status(S.WORKING, 2))
    assert not tracker.turn_ended
    feed(tracker, status(S.INPUT_REQUIRED, 3))
    assert tracker.turn_ended and not tracker.done


def test_resubscribe_snapshot_fills_the_gap_with_the_missing_parts_and_status() -> None:
    tracker = StreamTracker()
    feed(tracker, *FIRST)
    tracker.reconnecting(resumed_by_id=False)
    # while away: chunk "c" and a status with a new timestamp
    snapshot = task(S.WORKING, artifact("a", "b", "c"), at=2)
    assert feed(tracker, snapshot) == ["append:a1:c", "status:TASK_STATE_WORKING"]
    assert feed(tracker, chunk("d", last=True), status(S.COMPLETED, 3)) == [
        "append:a1:d",
        "status:TASK_STATE_COMPLETED",
    ]
    assert tracker.done


def test_snapshot_showing_nothing_new_delivers_nothing() -> None:
    tracker = StreamTracker()
    feed(tracker, *FIRST)
    tracker.reconnecting(resumed_by_id=False)
    assert feed(tracker, task(S.WORKING, artifact("a", "b"), at=1)) == []


def test_snapshot_of_a_finished_task_ends_the_stream() -> None:
    tracker = StreamTracker()
    feed(tracker, *FIRST)
    tracker.reconnecting(resumed_by_id=False)
    out = feed(tracker, task(S.COMPLETED, artifact("a", "b", "c", "d"), at=5))
    assert out == ["append:a1:c+d", "status:TASK_STATE_COMPLETED"]
    assert tracker.done


def test_snapshot_with_a_replaced_artifact_sends_it_whole() -> None:
    tracker = StreamTracker()
    feed(tracker, *FIRST)
    tracker.reconnecting(resumed_by_id=False)
    assert feed(tracker, task(S.WORKING, artifact("new"), at=1)) == ["chunk:a1:new"]


def test_server_replaying_from_the_start_is_deduplicated() -> None:
    tracker = StreamTracker()
    feed(tracker, *FIRST)
    tracker.reconnecting(resumed_by_id=False)
    replay = [*FIRST, chunk("c"), status(S.COMPLETED, 3)]
    assert feed(tracker, *replay) == ["append:a1:c", "status:TASK_STATE_COMPLETED"]


def test_after_the_replay_prefix_identical_events_are_new() -> None:
    tracker = StreamTracker()
    feed(tracker, task(), status(S.WORKING, 1), chunk(".", append=False), chunk("."))
    tracker.reconnecting(resumed_by_id=False)
    # replay of the two "." chunks, then a third, identical one that is genuinely new
    out = feed(tracker, chunk(".", append=False), chunk("."), chunk("."))
    assert out == ["append:a1:."]


def test_snapshot_then_replayed_live_events_are_dropped() -> None:
    tracker = StreamTracker()
    feed(tracker, *FIRST)
    tracker.reconnecting(resumed_by_id=False)
    assert feed(tracker, task(S.WORKING, artifact("a", "b", "c"), at=2)) == [
        "append:a1:c",
        "status:TASK_STATE_WORKING",
    ]
    # a server that also replays the status it just folded into the snapshot
    assert feed(tracker, status(S.WORKING, 2), status(S.COMPLETED, 3)) == [
        "status:TASK_STATE_COMPLETED"
    ]


def test_resume_by_id_delivers_what_follows() -> None:
    tracker = StreamTracker()
    feed(tracker, *FIRST)
    tracker.reconnecting(resumed_by_id=True)
    assert feed(tracker, chunk("b"), status(S.COMPLETED, 3)) == [
        "append:a1:b",  # same content as an earlier chunk, but after the resume point: new
        "status:TASK_STATE_COMPLETED",
    ]


def test_message_answer_is_final() -> None:
    tracker = StreamTracker()
    reply = Message(message_id="m1", role=Role.AGENT, parts=[Part(text="hi")])
    assert feed(tracker, StreamResponse(message=reply)) == ["message:m1"]
    assert tracker.done


def test_interrupted_state_is_reported() -> None:
    tracker = StreamTracker()
    feed(tracker, task(), status(S.INPUT_REQUIRED, 1))
    assert tracker.interrupted and not tracker.done
