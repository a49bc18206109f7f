"""Agent commands (moves and UpdateArtifact), the lifecycle table they follow, and the event
log / fold they write."""

from __future__ import annotations

import pytest
from core_helpers import T0, accepted, assert_refused, new_task, task_in

from accord.core import _outcome, agent, lifecycle
from accord.core._events import Event, apply, fold
from accord.core._outcome import SEED_STATE_NAMES, Published
from accord.wire._errors import ErrorKind
from accord.wire._model import (
    Artifact,
    Message,
    Part,
    Role,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from accord.wire._time import format_timestamp

S = TaskState
STATES = [s for s in TaskState if s is not S.UNSPECIFIED]

# The lifecycle as docs/lifecycle.md states it: move -> (target, source states).
EXPECTED_MOVES = {
    "work": (S.WORKING, {S.SUBMITTED, S.WORKING, S.INPUT_REQUIRED, S.AUTH_REQUIRED}),
    "complete": (S.COMPLETED, {S.SUBMITTED, S.WORKING}),
    "fail": (S.FAILED, {S.SUBMITTED, S.WORKING, S.INPUT_REQUIRED, S.AUTH_REQUIRED}),
    "reject": (S.REJECTED, {S.SUBMITTED, S.WORKING}),
    "require_input": (S.INPUT_REQUIRED, {S.SUBMITTED, S.WORKING}),
    "require_auth": (S.AUTH_REQUIRED, {S.SUBMITTED, S.WORKING}),
    "cancel": (S.CANCELED, {S.SUBMITTED, S.WORKING, S.INPUT_REQUIRED, S.AUTH_REQUIRED}),
}


def test_lifecycle_table_is_the_documented_one() -> None:
    table = {name: (m.to, set(m.sources)) for name, m in lifecycle.MOVES.items()}
    assert table == EXPECTED_MOVES
    assert set(agent.AGENT_MOVES) == set(lifecycle.MOVES) - {"cancel"}


def test_terminal_states_have_no_way_out() -> None:
    for state in lifecycle.TERMINAL:
        assert lifecycle.is_terminal(state)
        assert lifecycle.ends_turn(state)
        assert not any(lifecycle.can_move(name, state) for name in lifecycle.MOVES)
    for state in lifecycle.INTERRUPTED:
        assert lifecycle.ends_turn(state)
        assert not lifecycle.is_terminal(state)
    assert not lifecycle.ends_turn(S.WORKING)
    assert not lifecycle.ends_turn(S.SUBMITTED)


# --- moves ---------------------------------------------------------------------------------

ALLOWED = [
    (name, state)
    for name in agent.AGENT_MOVES
    for state in STATES
    if lifecycle.can_move(name, state)
]
REFUSED = [
    (name, state)
    for name in agent.AGENT_MOVES
    for state in STATES
    if not lifecycle.can_move(name, state)
]


@pytest.mark.parametrize(("name", "state"), ALLOWED)
def test_moved(name: str, state: TaskState) -> None:
    record, log = task_in(state)
    outcome = agent.move(record, name, T0 + 100)
    new = accepted(outcome, "moved")
    target = lifecycle.MOVES[name].to
    assert new.state is target
    (event,) = outcome.events
    assert (event.kind, event.seq, event.at_ms) == ("status", record.seq + 1, T0 + 100)
    assert isinstance(event.body, TaskStatusUpdateEvent)
    assert new.seq == record.seq + 1
    assert new.updated_ms == T0 + 100
    assert new.task.history == record.task.history  # no status message, no history entry
    assert fold([*log, *outcome.events]) == new.task
    assert outcome.published == [
        Published(
            "a2a.tasks.TaskStatusUpdated",
            {
                "task_id": "t-1",
                "context_id": "c-1",
                "status": {"state": target.value, "timestamp": format_timestamp(T0 + 100)},
            },
        )
    ]


def test_a_status_update_publishes_its_payload_when_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine decides every status update an agent sends (a harness's step events among
    them) as a command, and only the command surface reads what one publishes: its payload is
    built when first read, from the update as decided, and once."""
    built: list[object] = []
    real = _outcome.to_builtins

    def counted(value: object) -> object:
        built.append(value)
        return real(value)

    monkeypatch.setattr(_outcome, "to_builtins", counted)
    record, _ = task_in(S.WORKING)
    step = Message(message_id="m-step", role=Role.AGENT, parts=[Part(text="step")])
    outcome = agent.note(record, T0 + 100, step)
    accepted(outcome, "noted")
    assert built == []  # decided and appended: nothing built
    (published,) = outcome.published
    assert published.event == "a2a.tasks.TaskStatusUpdated"
    assert published.payload["status"]["message"]["parts"] == [{"text": "step"}]
    assert published.payload["status"]["timestamp"] == format_timestamp(T0 + 100)
    assert published.payload is published.payload
    assert len(built) == 1


@pytest.mark.parametrize(("name", "state"), REFUSED)
def test_wrong_state(name: str, state: TaskState) -> None:
    record, _ = task_in(state)
    outcome = agent.move(record, name, T0 + 100)
    assert_refused(outcome, "wrong-state")
    assert outcome.payload == {"state": SEED_STATE_NAMES[state]}
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.TASK_STATE_CONFLICT
    assert outcome.error.metadata == {"taskId": "t-1", "state": state.value}


def test_wrong_state_payload_uses_the_seeds_state_names() -> None:
    done, _ = task_in(S.COMPLETED)
    assert agent.move(done, "work", T0).payload == {"state": "Completed"}
    waiting, _ = task_in(S.INPUT_REQUIRED)
    assert agent.move(waiting, "complete", T0).payload == {"state": "InputRequired"}
    auth, _ = task_in(S.AUTH_REQUIRED)
    assert agent.move(auth, "require_input", T0).payload == {"state": "AuthRequired"}
    assert set(SEED_STATE_NAMES) == set(STATES)


@pytest.mark.parametrize("name", agent.AGENT_MOVES)
def test_move_of_an_unknown_task(name: str) -> None:
    outcome = agent.move(None, name, T0, task_id="t-404")
    assert_refused(outcome, "not-found")
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.TASK_NOT_FOUND


def test_working_again_reports_progress() -> None:
    record, log = task_in(S.WORKING)
    progress = Message(message_id="p-1", role=Role.USER, parts=[Part(text="50%")])
    outcome = agent.move(record, "work", T0 + 5, progress)
    new = accepted(outcome, "moved")
    assert new.state is S.WORKING
    status_message = new.task.status.message
    assert isinstance(status_message, Message)
    # The status message is the agent's, bound to the task, and joins the history.
    assert (status_message.role, status_message.task_id, status_message.context_id) == (
        Role.AGENT,
        "t-1",
        "c-1",
    )
    assert new.task.history[-1] == status_message
    assert fold([*log, *outcome.events]) == new.task


# --- UpdateArtifact ------------------------------------------------------------------------


def _artifact(artifact_id: str, *texts: str) -> Artifact:
    return Artifact(artifact_id=artifact_id, parts=[Part(text=t) for t in texts])


def test_updated_adds_an_artifact_and_keeps_the_state() -> None:
    record, log = task_in(S.WORKING)
    outcome = agent.update_artifact(record, _artifact("a", "x"), T0 + 7, last_chunk=True)
    new = accepted(outcome, "updated")
    assert new.state is S.WORKING
    assert new.updated_ms == record.updated_ms  # only status changes move the list order
    (event,) = outcome.events
    assert (event.kind, event.seq) == ("artifact", record.seq + 1)
    assert isinstance(event.body, TaskArtifactUpdateEvent)
    assert (event.body.append, event.body.last_chunk) == (False, True)
    assert new.task.artifacts == [_artifact("a", "x")]
    assert fold([*log, *outcome.events]) == new.task
    assert outcome.published == [
        Published(
            "a2a.tasks.TaskArtifactUpdated",
            {
                "taskId": "t-1",
                "contextId": "c-1",
                "artifact": {"artifactId": "a", "parts": [{"text": "x"}]},
            },
        )
    ]


def test_append_replace_and_add() -> None:
    record, log = task_in(S.WORKING)
    steps = [
        (_artifact("a", "1"), False),
        (_artifact("b", "x"), False),
        (_artifact("a", "2", "3"), True),  # chunk: appended to a's parts
        (_artifact("b", "y"), False),  # same id, no append: replaces b
        (_artifact("c", "z"), True),  # append to an unknown id: a new artifact
    ]
    for artifact, append_parts in steps:
        outcome = agent.update_artifact(record, artifact, T0 + 1, append_parts=append_parts)
        record = accepted(outcome, "updated")
        log.extend(outcome.events)
    assert record.task.artifacts == [
        _artifact("a", "1", "2", "3"),
        _artifact("b", "y"),
        _artifact("c", "z"),
    ]
    assert [e.seq for e in log] == list(range(1, len(log) + 1))
    assert fold(log) == record.task


@pytest.mark.parametrize("state", [S.SUBMITTED, S.INPUT_REQUIRED, S.AUTH_REQUIRED])
def test_artifacts_may_arrive_in_any_non_terminal_state(state: TaskState) -> None:
    record, _ = task_in(state)
    accepted(agent.update_artifact(record, _artifact("a", "x"), T0), "updated")


def test_update_artifact_refusals() -> None:
    missing = agent.update_artifact(None, _artifact("a", "x"), T0, task_id="t-404")
    assert_refused(missing, "not-found")
    for state in lifecycle.TERMINAL:
        record, _ = task_in(state)
        outcome = agent.update_artifact(record, _artifact("a", "x"), T0)
        assert_refused(outcome, "wrong-state")
        assert outcome.payload == {"state": SEED_STATE_NAMES[state]}


# --- events and fold -----------------------------------------------------------------------


def test_fold_of_the_log_is_the_snapshot_and_events_stream() -> None:
    record, log = new_task()
    working = agent.move(record, "work", T0 + 1)
    record = accepted(working, "moved")
    art = agent.update_artifact(record, _artifact("a", "x"), T0 + 2)
    record = accepted(art, "updated")
    log += [*working.events, *art.events]
    assert fold([]) is None
    assert fold(log) == record.task
    assert [e.stream_response().which for e in log] == ["task", "status_update", "artifact_update"]
    assert all(e.streamed for e in log)


def test_message_events_are_history_only() -> None:
    message = Message(message_id="m", role=Role.USER, parts=[Part(text="x")])
    event = Event(task_id="t-1", seq=2, kind="message", body=message, at_ms=T0)
    assert not event.streamed
    with pytest.raises(ValueError):
        event.stream_response()


def test_an_update_before_the_task_exists_is_an_error() -> None:
    record, _ = task_in(S.WORKING)
    status = TaskStatusUpdateEvent(task_id="t-1", context_id="c-1", status=record.task.status)
    with pytest.raises(ValueError):
        apply(None, Event(task_id="t-1", seq=1, kind="status", body=status, at_ms=T0))


def test_apply_does_not_modify_the_previous_snapshot() -> None:
    record, _ = new_task()
    before = record.task
    history = list(before.history)
    accepted(agent.update_artifact(record, _artifact("a", "x"), T0), "updated")
    progress = Message(message_id="p", role=Role.AGENT, parts=[Part(text="...")])
    accepted(agent.move(record, "work", T0, progress), "moved")
    assert before.history == history
    assert before.artifacts == []
    assert before.status.state is S.SUBMITTED
