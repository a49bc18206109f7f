"""The conversation rules as a property: any sequence of messages, completions, cancels and
role changes, from members in every role and from strangers, leaves the task in a state the
rules allow, and a refused step changes nothing.

Each step goes through the same pure functions the server runs: the harness agent's intake
and access checks, the core's SendMessage and CancelTask, and the harness core's turn,
completion and parking moves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from accord.agents._api import Admit, Divert
from accord.core import client as client_commands
from accord.core import lifecycle
from accord.core._caller import Caller
from accord.core._events import Event, fold
from accord.core._limits import Limits
from accord.core._outcome import Outcome
from accord.core._records import TaskRecord
from accord.harness import HarnessAgent, HarnessSettings
from accord.harness._wire import EVENT_MEDIA_TYPE, STATUS_KEY, Role
from accord.harness.core import _conversation as conversation
from accord.harness.core._state import extension_of, sub_state_of
from accord.wire._errors import A2AError, ErrorKind
from accord.wire._model import Message, Part, SendMessageRequest, TaskState

AGENT_ID = "harness"
UNLIMITED = Limits(tasks_per_tenant=None, messages_per_task=None, push_configs_per_task=None)
# The people who act: the task's reporter, and others the reporter's first brief gives roles
# to (an admin, a watcher, a second reporter); "mallory" is never on the task.
REPORTER = "rita"
CAST = {"adam": "admin", "wanda": "watcher", "rex": "reporter"}
STRANGER = "mallory"
PEOPLE = [REPORTER, *CAST, STRANGER]


def envelope(data: dict[str, object]) -> Part:
    return Part(data=data, media_type=EVENT_MEDIA_TYPE)


def message(n: int, task_id: str, parts: list[Part], sender: str) -> Message:
    return Message(
        message_id=f"m{n}",
        role="ROLE_USER",  # type: ignore[arg-type]
        parts=parts,
        task_id=task_id,
        metadata={"participant_id": sender},
    )


Step = tuple[str, str, int]  # (action, who, argument)
actions = st.sampled_from(["say", "complete", "cancel", "rename", "promote", "demote", "read"])
steps = st.lists(st.tuples(actions, st.sampled_from(PEOPLE), st.integers(0, 3)), max_size=25)


@dataclass
class World:
    """One task and everything that happened to it."""

    agent: HarnessAgent
    record: TaskRecord
    events: list[Event] = field(default_factory=list)
    now: int = 1_700_000_000_000
    n: int = 0

    def tick(self) -> int:
        self.now += 1
        self.n += 1
        return self.now

    def take(self, outcome: Outcome) -> None:
        assert outcome.ok, outcome.error
        assert outcome.record is not None
        self.events.extend(outcome.events)
        self.record = outcome.record


def open_task() -> World:
    agent = HarnessAgent(HarnessSettings(agent_id=AGENT_ID, model="scripted:none"))
    brief = {
        "kind": "task",
        "payload": {
            "name": "plan the offsite",
            "goal": "a plan",
            "participants": [
                {"id": who, "kind": "human", "role": role} for who, role in CAST.items()
            ],
        },
    }
    first = message(0, "", [Part(text="let's plan"), envelope(brief)], REPORTER)
    request = SendMessageRequest(message=first)
    verdict = agent.intake(request, None, Caller(participant=REPORTER))
    assert isinstance(verdict, Admit)
    created = client_commands.send_message(
        request,
        tenant="",
        task=None,
        tenant_task_count=0,
        now_ms=1,
        new_task_id="t1",
        new_context_id="c1",
        limits=UNLIMITED,
        message=verdict.message,
        task_metadata=verdict.task_metadata,
    )
    assert created.record is not None
    world = World(agent, created.record, list(created.events))
    run_turn(world)
    return world


def run_turn(world: World) -> None:
    world.take(conversation.start_turn(world.record, world.tick()))
    world.take(conversation.end_turn(world.record, world.tick(), "noted"))


def send(world: World, who: str, parts: list[Part]) -> Admit | Divert:
    """SendMessage as the engine decides it: intake, then the core's append."""
    request = SendMessageRequest(message=message(world.n, "t1", parts, who))
    verdict = world.agent.intake(request, world.record.task, Caller(participant=who))
    outcome = client_commands.send_message(
        request,
        tenant="",
        task=world.record,
        tenant_task_count=1,
        now_ms=world.tick(),
        new_task_id="unused",
        new_context_id="unused",
        limits=UNLIMITED,
        message=verdict.message,
        task_metadata=verdict.task_metadata,
    )
    if outcome.error is not None:
        raise outcome.error
    world.take(outcome)
    return verdict


def role_of(world: World, who: str) -> str | None:
    extension = extension_of(world.record.task)
    assert extension is not None
    role = extension.role_of(who)
    return role.value if role is not None else None


def participants_payload(world: World, who: str, role: str) -> dict[str, object]:
    extension = extension_of(world.record.task)
    assert extension is not None
    people = [
        {"id": p.id, "kind": p.kind, "role": role if p.id == who else p.role.value}
        for p in extension.participants
    ]
    return {"kind": "task", "payload": {"participants": people}}


def act(world: World, action: str, who: str, arg: int) -> None:
    """One step; raises A2AError when it is refused."""
    if action == "read":
        world.agent.access("read", world.record.task, Caller(participant=who))
    elif action == "cancel":
        world.agent.access("cancel", world.record.task, Caller(participant=who))
        outcome = client_commands.cancel_task(
            world.record, tenant="", task_id="t1", now_ms=world.tick()
        )
        if outcome.error is not None:
            raise outcome.error
        world.take(outcome)
    elif action == "say":
        send(world, who, [Part(text=f"note {arg}")])
        run_turn(world)
    elif action == "complete":
        verdict = send(world, who, [envelope({"kind": "control", "action": "complete"})])
        assert isinstance(verdict, Divert) and verdict.interrupt
        world.take(conversation.complete(world.record, world.tick(), who))
    elif action == "rename":
        send(world, who, [envelope({"kind": "task", "payload": {"name": f"name {arg}"}})])
        run_turn(world)
    else:  # promote / demote one of the cast
        target = list(CAST)[arg % len(CAST)]
        role = "admin" if action == "promote" else "watcher"
        send(world, who, [envelope(participants_payload(world, target, role))])
        run_turn(world)


@settings(max_examples=150, deadline=None)
@given(steps)
def test_any_sequence_keeps_the_conversation_rules(script: list[Step]) -> None:
    world = open_task()
    for action, who, arg in script:
        before = world.record
        before_events = len(world.events)
        role = role_of(world, who)
        terminal = lifecycle.is_terminal(before.state)
        try:
            act(world, action, who, arg)
        except A2AError as refusal:
            # A refused step changes nothing, and says why in the protocol's terms.
            assert world.record is before
            assert len(world.events) == before_events
            if role is None:
                # Strangers learn nothing: the task is "not found", as an unknown id is.
                assert refusal.kind is ErrorKind.TASK_NOT_FOUND
                assert refusal.message == "task 't1' not found"
            elif (role == "watcher" and action in ("complete", "cancel")) or (
                action in ("promote", "demote") and role != "admin"
            ):
                assert refusal.kind is ErrorKind.UNSUPPORTED_OPERATION
            else:
                assert terminal, f"{who} ({role}) refused {action}: {refusal}"
            continue
        # Accepted: only what the rules allow happened.
        assert role is not None, f"a stranger's {action} was accepted"
        assert not terminal or action == "read", "a terminal task changed"
        if action in ("complete", "cancel"):
            assert role != "watcher"
        if action in ("promote", "demote"):
            assert role == "admin"
        if action == "complete":
            assert world.record.state is TaskState.COMPLETED
            status = world.record.task.status.message
            assert status is not msgspec.UNSET and status.text() == f"completed by {who}"
        check_invariants(world)


def denied(role: str, action: str) -> bool:
    """What a member's role does not allow: watchers end nothing, non-admins change no role."""
    if action in ("complete", "cancel"):
        return role == "watcher"
    return action in ("promote", "demote") and role != "admin"


def check_invariants(world: World) -> None:
    task = world.record.task
    # The snapshot is the fold of the log.
    assert fold(world.events) == task
    assert world.record.seq == len(world.events)
    # The sub-state is there exactly while the conversation waits.
    parked = world.record.state is TaskState.INPUT_REQUIRED
    assert (sub_state_of(task) == "awaiting-next-message") is parked
    assert (STATUS_KEY in (task.metadata or {})) is parked
    # The harness's own place and the reporter's are never lost to a role change of others.
    assert role_of(world, AGENT_ID) == Role.ASSIGNEE.value
    assert role_of(world, REPORTER) == Role.REPORTER.value
