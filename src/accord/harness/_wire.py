"""The harness's wire: the extension URIs, metadata keys and media types tiny-harness clients
speak, and the shapes carried under them.

Every name here is fixed by that wire (its clients and plugins work against accord
unchanged), so none of them is accord's own choice. The task extension's data lives in
``Task.metadata[TASK_KEY]`` as :class:`TaskExtension`; the status extension's sub-state in
``Task.metadata[STATUS_KEY]`` and in the metadata of the status update that set it; inbound
envelopes are data parts of media type :data:`EVENT_MEDIA_TYPE`.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

import msgspec

EXTENSION_ROOT = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/"
KEY_PREFIX = "io.github.madarauchiha-314.tiny-harness/"

TASK_URI = EXTENSION_ROOT + "task/v1"
STATUS_URI = EXTENSION_ROOT + "status/v1"
CHANNEL_URI = EXTENSION_ROOT + "channel/v1"
COMMANDS_URI = EXTENSION_ROOT + "commands/v1"

TASK_KEY = KEY_PREFIX + "task"
STATUS_KEY = KEY_PREFIX + "status"

TASK_MEDIA_TYPE = "application/vnd.tiny-harness.task+json"
CHANNEL_MEDIA_TYPE = "application/vnd.tiny-harness.channel+json"
EVENT_MEDIA_TYPE = "application/vnd.tiny-harness.event+json"

# Where a tiny-harness client asserts who it is when nothing authenticates it.
PARTICIPANT_HEADER = "X-Participant-Id"
PARTICIPANT_METADATA = "participant_id"
# Message metadata of a command's reply (and, in accord, of the command message as stored):
# the command's name, and the task it created, if any.
COMMAND_METADATA = "command"
TASK_REF_METADATA = "task_ref"


class Role(enum.StrEnum):
    ASSIGNEE = "assignee"
    REPORTER = "reporter"
    WATCHER = "watcher"
    ADMIN = "admin"


class SubState(enum.StrEnum):
    """Why a task is INPUT_REQUIRED. The wire value is an open string: a reader treats one
    it does not know as plain INPUT_REQUIRED."""

    AWAITING_NEXT_MESSAGE = "awaiting-next-message"
    AWAITING_ANSWER = "awaiting-answer"
    # accord's: the turn is over and the task waits for sub-tasks working for it (a child
    # on this harness or another agent, a participant's task) to end
    AWAITING_SUBTASKS = "awaiting-subtasks"


# The sub-states a task reference (``sub_tasks``, a step's ``linked_tasks``) may carry: the
# schema tiny-harness's clients read references with is closed to these two (an unknown
# value there makes them refuse the whole task extension). A task's own status sub-state is
# open, and carries accord's ``awaiting-subtasks`` too.
REF_SUB_STATES = frozenset({SubState.AWAITING_NEXT_MESSAGE.value, SubState.AWAITING_ANSWER.value})


def ref_sub_state(sub_state: str | None) -> str | None:
    """``sub_state`` as a task reference carries it: a value outside
    :data:`REF_SUB_STATES` (accord's ``awaiting-subtasks``, another agent's own) is none."""
    return sub_state if sub_state in REF_SUB_STATES else None


# Every object below is closed (an unknown field is an error naming it) and frozen.
Kind = Literal["human", "agent"]
Lifecycle = Literal["conversation", "delegated"]
Effort = Literal["low", "medium", "high"]
StepState = Literal["pending", "active", "done", "failed"]


class Participant(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    id: str
    kind: Kind
    role: Role
    display_name: str = ""


class AgentRef(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A registry reference to another agent (tiny-harness's ``EntityRef``)."""

    kind: str
    id: str
    version: str | None = None


class TaskRef(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A sub-task or parent task: on this agent (``agent`` None) or on another."""

    task_id: str
    agent: AgentRef | None = None
    state: str | None = None  # the last state heard of, without the TASK_STATE_ prefix
    sub_state: str | None = None  # one of REF_SUB_STATES (ref_sub_state), or none


class Criterion(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    text: str
    met: bool = False


class Step(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    id: str
    name: str
    description: str = ""
    depends_on: tuple[str, ...] = ()
    output: str | None = None
    linked_tasks: tuple[TaskRef, ...] = ()
    state: StepState = "pending"


class Plan(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    steps: tuple[Step, ...]


class TaskExtension(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """What A2A's Task lacks, under ``Task.metadata[TASK_KEY]``."""

    name: str
    goal: str
    type: str | None = None
    description: str = ""
    acceptance_criteria: tuple[Criterion, ...] = ()
    participants: tuple[Participant, ...] = ()
    # The harness's own (HARNESS_FIELDS): no envelope sets these.
    parent_tasks: tuple[TaskRef, ...] = ()
    sub_tasks: tuple[TaskRef, ...] = ()
    plan: Plan | None = None
    # Server-controlled (SERVER_FIELDS): a participant's envelope sets none of these.
    lifecycle: Lifecycle | None = None
    model: str | None = None
    reasoning_effort: Effort | None = None

    def participant(self, participant_id: str) -> Participant | None:
        for participant in self.participants:
            if participant.id == participant_id:
                return participant
        return None

    def role_of(self, participant_id: str) -> Role | None:
        participant = self.participant(participant_id)
        return participant.role if participant is not None else None


# The fields of a task envelope, by who may set them (docs/harness.md, "Who sets what").
# Any participant, on a brief and on a change:
OPEN_FIELDS = frozenset({"name", "description", "acceptance_criteria"})
# An admin on a change (the sender of a brief lists whom they like):
ADMIN_FIELDS = frozenset({"participants"})
# The server, or a brief from the harness itself or a delegator its operator trusts:
SERVER_FIELDS = frozenset({"lifecycle", "model", "reasoning_effort"})
# The harness only, never an envelope: its record of the sub-tasks it made, which the
# follower acts on (a parent named here is told of this task's end and cancels it).
HARNESS_FIELDS = frozenset({"parent_tasks", "sub_tasks"})


def extension_dict(extension: TaskExtension) -> dict[str, Any]:
    """The extension as plain JSON data, every field present (as tiny-harness writes it)."""
    # (through JSON: lists, not the tuples msgspec.to_builtins keeps, like any stored task)
    data: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(extension))
    return data


def status_data(sub_state: str) -> dict[str, Any]:
    """The status extension's value for ``sub_state``."""
    return {"sub_state": sub_state}
