"""Sub-tasks working for a task (pure): the records that say what each child is, the bounds
on making them, what a child's state means for its parent, and the messages and decisions
that tell a parent about a child.

Every child is a task of this harness, named ``<parent>.<n>``: a **delegated** child runs a
turn of its own on the brief it was given (``spawn_subtask``), a **participant** child waits
for the participant it is assigned to (``create_task_for_participant``), a **conversation**
child is a ``/sub-task``. A delegated child on another agent of the roster is a *stand-in*
here, which the harness keeps in step with the task it made on that agent (its state is the
remote task's: :class:`RemoteState`).

What lives where (accord's own keys: the tiny-harness task extension is a closed shape):

- the parent: ``Task.metadata["accord.harness/subtasks"]`` = ``{"children": {id: ChildRecord}}``
  beside the extension's ``sub_tasks`` references (id, agent, state, sub_state);
- the child: ``Task.metadata["accord.harness/subtask"]`` = :class:`ChildInfo` (its depth, its
  kind, and for a stand-in the remote task).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from accord.core import Outcome, TaskRecord, lifecycle, refused
from accord.core import agent as moves
from accord.harness._wire import (
    PARTICIPANT_METADATA,
    AgentRef,
    Criterion,
    Participant,
    Role,
    SubState,
    TaskExtension,
    TaskRef,
    ref_sub_state,
)
from accord.harness.channels._state import HelpRequest, open_requests, state_of
from accord.harness.core import _plan as plans
from accord.harness.core._state import extension_of, metadata_with, sub_state_of
from accord.harness.core._subtasks import TERMINAL_NAMES, state_name
from accord.wire import UNSET, A2AError, ErrorKind, Message, Part, Task, TaskState
from accord.wire import Role as MessageRole

CHILDREN_KEY = "accord.harness/subtasks"
CHILD_KEY = "accord.harness/subtask"
# Message metadata of a child's end told to its parent: {task_id, agent, state, sub_state}.
TOLD_KEY = "accord.harness/sub_task"
AGENT_KIND = "agent"  # an AgentRef's kind for a roster agent (tiny-harness's EntityKind)
MAX_RESULT = 20_000  # characters of a child's result its parent's model reads

Kind = Literal["delegated", "participant", "conversation"]
Meaning = Literal["working", "waiting", "asking", "ended"]
INTERRUPTED_NAMES = frozenset({"INPUT_REQUIRED", "AUTH_REQUIRED"})
OPEN_NAMES = frozenset({"SUBMITTED", "WORKING", *INTERRUPTED_NAMES})


class ChildRecord(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """What the parent knows of a child it made: its kind, the roster agent it runs on,
    the tool call that made it (a call run again after a crash finds its child), and whom
    its questions are relayed to (the participant whose turn made it)."""

    kind: Kind
    agent: str | None = None
    call: str = ""
    asked_by: str = ""


class Question(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A child's request for input: the id of the status message that asks, and its text."""

    id: str
    text: str


class PushState(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """The push config a stand-in registered on its remote task: the SHA-256 (hex) of the
    secret token the agent sends with each push (the token itself is kept nowhere), when
    the registration began (ms), whether the agent took it, and why it refused it."""

    token_sha256: str
    since_ms: int = 0
    registered: bool = False
    refused: str = ""


class RemoteState(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A stand-in's remote task as last seen: on roster agent ``agent``, ``task_id`` there
    (empty until the agent took the brief), its state and sub-state, the question it asks,
    how many of the stand-in's messages were sent on to it (the brief is the first), why
    it could not be reached lately, and the push config registered there (if any)."""

    agent: str
    task_id: str = ""
    state: str = "SUBMITTED"
    sub_state: str | None = None
    question: Question | None = None
    forwarded: int = 1
    error: str = ""
    push: PushState | None = None


class ChildInfo(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    depth: int = 1
    kind: Kind = "delegated"
    remote: RemoteState | None = None


def children_of(task: Task) -> dict[str, ChildRecord]:
    metadata = task.metadata if isinstance(task.metadata, dict) else {}
    value = metadata.get(CHILDREN_KEY)
    if not isinstance(value, dict):
        return {}
    return msgspec.convert(value.get("children", {}), dict[str, ChildRecord])


def info_of(task: Task) -> ChildInfo | None:
    metadata = task.metadata if isinstance(task.metadata, dict) else {}
    value = metadata.get(CHILD_KEY)
    return msgspec.convert(value, ChildInfo) if value is not None else None


def depth_of(task: Task) -> int:
    """How many sub-task levels are above ``task`` (0: it is no sub-task of this harness)."""
    info = info_of(task)
    return info.depth if info is not None else 0


def parent_of(task: Task) -> str | None:
    """The parent on this harness a child names (the first of its ``parent_tasks`` with no
    agent), None for a task that is no sub-task."""
    extension = extension_of(task)
    if extension is None:
        return None
    for ref in extension.parent_tasks:
        if ref.agent is None:
            return ref.task_id
    return None


def lists(parent: Task, child_id: str) -> bool:
    """Whether ``parent``'s own record lists ``child_id`` among its sub-tasks: what makes a
    task that names a parent its child (the name alone is only the child's say)."""
    extension = extension_of(parent)
    return extension is not None and any(ref.task_id == child_id for ref in extension.sub_tasks)


def with_children(metadata: Any, children: Mapping[str, ChildRecord]) -> dict[str, Any]:
    base = dict(metadata) if isinstance(metadata, dict) else {}
    base[CHILDREN_KEY] = {"children": msgspec.to_builtins(dict(children))}
    return base


def with_info(metadata: Any, info: ChildInfo) -> dict[str, Any]:
    base = dict(metadata) if isinstance(metadata, dict) else {}
    base[CHILD_KEY] = msgspec.to_builtins(info)
    return base


# --- bounds --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bounds:
    """``max_depth``: sub-task levels below a task its participants started; ``max_children``:
    sub-tasks of one task (every kind)."""

    max_depth: int = 3
    max_children: int = 16


def over_bounds(task: Task, bounds: Bounds) -> str | None:
    """Why ``task`` may not have one more sub-task (None: it may)."""
    depth = depth_of(task)
    if depth + 1 > bounds.max_depth:
        return (
            f"the sub-task depth limit is reached: {task.id} is {depth} level(s) down, "
            f"and sub-tasks go {bounds.max_depth} level(s) deep at most (max_subtask_depth)"
        )
    extension = extension_of(task)
    count = len(extension.sub_tasks) if extension is not None else 0
    if count >= bounds.max_children:
        return f"{task.id} has {count} sub-tasks already, as many as a task may have (max_subtasks)"
    return None


# --- naming and reserving a child ------------------------------------------------------------


def child_id(parent_id: str, n: int) -> str:
    return f"{parent_id}.{n}"


def next_child_id(parent_id: str, extension: TaskExtension, taken: Collection[str] = ()) -> str:
    """``<parent>.<n>`` for the next n: one past the highest its children took, and none of
    ``taken`` (ids a task was found to hold already: a ``/sub-task`` made before its parent
    lists it). Every kind of child is named by it."""
    prefix = parent_id + "."
    numbers = [
        int(ref.task_id[len(prefix) :])
        for ref in extension.sub_tasks
        if ref.task_id.startswith(prefix) and ref.task_id[len(prefix) :].isdigit()
    ]
    n = max(numbers, default=0) + 1
    while child_id(parent_id, n) in taken:
        n += 1
    return child_id(parent_id, n)


def child_ref(task_id: str, agent: str | None, state: str = "SUBMITTED") -> TaskRef:
    ref_agent = AgentRef(kind=AGENT_KIND, id=agent) if agent is not None else None
    return TaskRef(task_id=task_id, agent=ref_agent, state=state)


def reserved_for(task: Task, call: str) -> str | None:
    """The child a tool call made already (None: none)."""
    if not call:
        return None
    for task_id, record in children_of(task).items():
        if record.call == call:
            return task_id
    return None


def reserve(
    record: TaskRecord | None,
    now_ms: int,
    child: ChildRecord,
    bounds: Bounds,
    made: list[str],
    step: str | None = None,
    taken: Collection[str] = (),
) -> Outcome:
    """A new child's place in the parent: its reference (SUBMITTED) in ``sub_tasks`` (and
    in the plan's ``step``, when given) and its record, under the next ``<parent>.<n>``
    (put in ``made``). A call that reserved a child already gets that one again, unchanged;
    past the bounds, or for a step the plan lacks, the refusal says why. ``taken``: ids
    another child holds (the reservation of one of them is given up: its reference stays,
    naming that child)."""
    if record is None:
        return moves.set_metadata(record, {}, now_ms)  # (the refusal: no such task)
    task = record.task
    extension = extension_of(task)
    if extension is None:
        return _refusal(f"task {task.id} is not a conversation of this harness")
    if lifecycle.is_terminal(record.state):
        return _refusal(f"task {task.id} is over")
    again = reserved_for(task, child.call)
    if again is not None and again not in taken:
        made[:] = [again]
        return Outcome("unchanged", record=record)
    records = {k: v for k, v in children_of(task).items() if k not in taken or v != child}
    problem = over_bounds(task, bounds)
    if problem is not None:
        return _refusal(problem)
    new_id = next_child_id(task.id, extension, taken)
    if step is not None:
        try:
            plan = plans.linked(extension.plan, step, child_ref(new_id, child.agent))
        except plans.PlanError as exc:
            return _refusal(str(exc))
        extension = msgspec.structs.replace(extension, plan=plan)
    made[:] = [new_id]
    return _with_child(record, now_ms, extension, new_id, child, records=records)


def _with_child(
    record: TaskRecord,
    now_ms: int,
    extension: TaskExtension,
    task_id: str,
    child: ChildRecord,
    records: Mapping[str, ChildRecord] | None = None,
) -> Outcome:
    refs = (*extension.sub_tasks, child_ref(task_id, child.agent))
    changed = msgspec.structs.replace(extension, sub_tasks=refs)
    kept = children_of(record.task) if records is None else records
    children = {**kept, task_id: child}
    metadata = with_children(metadata_with(_metadata(record), changed), children)
    return moves.set_metadata(record, metadata, now_ms)


def _refusal(reason: str) -> Outcome:
    return refused("subtask-refused", A2AError(ErrorKind.UNSUPPORTED_OPERATION, reason))


def _metadata(record: TaskRecord) -> dict[str, Any]:
    metadata = record.task.metadata
    return dict(metadata) if isinstance(metadata, dict) else {}


# --- the children's own extensions -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Brief:
    """What a child is asked to do: the task envelope's open fields."""

    name: str
    goal: str
    description: str = ""
    acceptance_criteria: tuple[str, ...] = ()

    def text(self) -> str:
        """The brief as a message's text: the child sees nothing else of its parent."""
        parts = [self.goal]
        if self.description:
            parts.append(self.description)
        if self.acceptance_criteria:
            listed = "\n".join(f"- {c}" for c in self.acceptance_criteria)
            parts.append("Acceptance criteria:\n" + listed)
        return "\n\n".join(parts)

    def envelope(self) -> dict[str, Any]:
        """The task envelope's payload another harness makes its task from (open fields
        only: the server-controlled ones are its own)."""
        payload: dict[str, Any] = {"name": self.name, "goal": self.goal}
        if self.description:
            payload["description"] = self.description
        if self.acceptance_criteria:
            payload["acceptance_criteria"] = [{"text": c} for c in self.acceptance_criteria]
        return payload


def delegated_extension(
    parent_id: str, parent: TaskExtension, brief: Brief, agent_id: str
) -> TaskExtension:
    """A delegated child: the parent's participants (the harness its assignee), the parent's
    model settings, ``delegated`` (it completes when its turn ends)."""
    people = [_demoted(p) for p in parent.participants if p.id != agent_id]
    people.append(Participant(id=agent_id, kind="agent", role=Role.ASSIGNEE))
    child = _briefed(parent_id, brief, people)
    return msgspec.structs.replace(
        child,
        lifecycle="delegated",
        model=parent.model,
        reasoning_effort=parent.reasoning_effort,
    )


def participant_extension(
    parent_id: str, parent: TaskExtension, brief: Brief, assignee: str, agent_id: str
) -> TaskExtension:
    """A participant's child: assigned to ``assignee`` (the harness watches it); the
    parent's other participants keep their roles."""
    people: list[Participant] = []
    for p in parent.participants:
        if p.id == assignee:
            people.append(msgspec.structs.replace(p, role=Role.ASSIGNEE))
        elif p.id == agent_id:
            people.append(msgspec.structs.replace(p, role=Role.WATCHER))
        else:
            people.append(_demoted(p))
    if all(p.id != agent_id for p in people):
        people.append(Participant(id=agent_id, kind="agent", role=Role.WATCHER))
    return _briefed(parent_id, brief, people)


def _briefed(parent_id: str, brief: Brief, people: list[Participant]) -> TaskExtension:
    """A child's extension: its brief, its participants, its parent."""
    return TaskExtension(
        name=brief.name,
        goal=brief.goal,
        description=brief.description,
        acceptance_criteria=tuple(Criterion(text=c) for c in brief.acceptance_criteria),
        participants=tuple(people),
        parent_tasks=(TaskRef(task_id=parent_id),),
    )


def _demoted(participant: Participant) -> Participant:
    """A participant of the parent in a child: an assignee there is a reporter here (the
    child has one assignee)."""
    if participant.role is Role.ASSIGNEE:
        return msgspec.structs.replace(participant, role=Role.REPORTER)
    return participant


def assignee_of(extension: TaskExtension) -> str | None:
    for participant in extension.participants:
        if participant.role is Role.ASSIGNEE:
            return participant.id
    return None


def is_participant_task(extension: TaskExtension, agent_id: str) -> bool:
    """A task assigned to a participant, not to the harness: no turn runs on it."""
    assignee = assignee_of(extension)
    return assignee is not None and assignee != agent_id and extension.lifecycle is None


# --- what a child's state means for its parent ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Observed:
    """A child as its parent sees it: its state (a stand-in's is its remote task's), its
    sub-state, and the question it asks, if any."""

    state: str
    sub_state: str | None = None
    question: Question | None = None


def observed(task: Task) -> Observed:
    info = info_of(task)
    state = state_name(task.status.state)
    if info is not None and info.remote is not None and state not in TERMINAL_NAMES:
        remote = info.remote
        return Observed(remote.state, remote.sub_state, remote.question)
    sub_state = sub_state_of(task)
    question = None
    if state in INTERRUPTED_NAMES:
        question = _question(task)
    return Observed(state, sub_state, question)


def _question(task: Task) -> Question | None:
    """What an interrupted child of this harness asks: its open help request (the newest),
    else its status message."""
    asked = open_requests(task, extension_of(task))
    if asked:
        return Question(id=asked[-1].id, text=asked[-1].question)
    message = task.status.message
    if isinstance(message, Message) and message.text():
        return Question(id=message.message_id, text=message.text())
    return None


def meaning(kind: Kind, seen: Observed) -> Meaning:
    """What a child's state means for its parent:

    - ``ended``: terminal; or a delegated child parked awaiting its next message (a peer
      that runs its tasks as conversations has answered: that answer is its result);
    - ``asking``: a delegated child waiting for input or authentication (its question goes
      to the parent's participants);
    - ``waiting``: a conversation or participant's child waiting for a message;
    - ``working``: anything else (a child waiting for its own sub-tasks works)."""
    if seen.state in TERMINAL_NAMES:
        return "ended"
    if seen.state in INTERRUPTED_NAMES:
        if seen.sub_state == SubState.AWAITING_SUBTASKS.value:
            return "working"
        if kind != "delegated":
            return "waiting"
        if seen.sub_state == SubState.AWAITING_NEXT_MESSAGE.value:
            return "ended"
        return "asking"
    return "working"


def child_meaning(kind: Kind, child: Task, seen: Observed) -> Meaning:
    """:func:`meaning` for a child task as it is here: a stand-in whose remote task ended
    is still working until it has read that end and ended itself (with the result)."""
    found = meaning(kind, seen)
    info = info_of(child)
    if found == "ended" and info is not None and info.remote is not None:
        state = child.status.state
        if not (isinstance(state, TaskState) and lifecycle.is_terminal(state)):
            return "working"
    return found


def waits_for_children(task: Task) -> bool:
    """Whether sub-tasks working for the task are still under way (delegated and
    participants' children, as its references last saw them): it parks awaiting them."""
    extension = extension_of(task)
    if extension is None or not extension.sub_tasks:
        return False
    records = children_of(task)
    for ref in extension.sub_tasks:
        record = records.get(ref.task_id)
        if record is None or record.kind == "conversation":
            continue
        if meaning(record.kind, Observed(ref.state or "SUBMITTED", ref.sub_state)) != "ended":
            return True
    return False


def with_seen(extension: TaskExtension, task_id: str, seen: Observed) -> TaskExtension:
    """``extension`` with its references to ``task_id`` (in ``sub_tasks`` and the plan's
    ``linked_tasks``) showing ``seen``: its state, and its sub-state when references may
    carry it (``awaiting-subtasks`` is the child's own status only: ref_sub_state)."""

    def seen_so(ref: TaskRef) -> TaskRef:
        if ref.task_id != task_id:
            return ref
        sub_state = ref_sub_state(seen.sub_state)
        return msgspec.structs.replace(ref, state=seen.state, sub_state=sub_state)

    return with_refs(extension, seen_so)


def ended_with(extension: TaskExtension) -> TaskExtension:
    """The references of a task that ends (completed, canceled, failed), as its end leaves
    them: every child not ended yet is canceled with it — the cascade cancels a child of this
    harness, and a stand-in ends canceled whatever its remote task did — so its reference
    says CANCELED now. A terminal task never changes again: written later, it never is."""

    def canceled(ref: TaskRef) -> TaskRef:
        if (ref.state or "") in TERMINAL_NAMES:
            return ref
        return msgspec.structs.replace(ref, state="CANCELED", sub_state=None)

    return with_refs(extension, canceled)


def with_refs(extension: TaskExtension, change: Callable[[TaskRef], TaskRef]) -> TaskExtension:
    """``extension`` with ``change`` made to each reference to a child: in ``sub_tasks``, and
    in the plan's steps' ``linked_tasks``."""
    refs = tuple(change(ref) for ref in extension.sub_tasks)
    plan = extension.plan
    if plan is not None and any(step.linked_tasks for step in plan.steps):
        steps = tuple(
            msgspec.structs.replace(step, linked_tasks=tuple(change(r) for r in step.linked_tasks))
            for step in plan.steps
        )
        plan = msgspec.structs.replace(plan, steps=steps)
    return msgspec.structs.replace(extension, sub_tasks=refs, plan=plan)


def seen_changed(record: TaskRecord | None, now_ms: int, task_id: str, seen: Observed) -> Outcome:
    """The parent's reference to a child brought up to date (unchanged when it is)."""
    if record is None or lifecycle.is_terminal(record.state):
        return Outcome("unchanged", record=record)
    extension = extension_of(record.task)
    if extension is None:
        return Outcome("unchanged", record=record)
    changed = with_seen(extension, task_id, seen)
    if changed == extension:
        return Outcome("unchanged", record=record)
    return moves.set_metadata(record, metadata_with(_metadata(record), changed), now_ms)


def orphaned(parent: Task | None, child: Task) -> bool:
    """A child whose parent is over (or gone) while it is not: it must not live on."""
    if lifecycle.is_terminal(_state(child)):
        return False
    return parent is None or lifecycle.is_terminal(_state(parent))


def _state(task: Task) -> Any:
    return task.status.state


# --- telling a parent ----------------------------------------------------------------------


def told_id(parent_id: str, child: str) -> str:
    """The id of the message that tells the parent a child ended (one per child)."""
    return f"{parent_id}:sub-task:{child}"


def result_text(task: Task) -> str:
    """What a child ended with: its artifacts read as text (a streamed artifact's chunks
    joined, data parts as JSON lines), after its status message unless that says what an
    artifact does already (a streamed answer), at most :data:`MAX_RESULT` characters."""
    bodies: list[tuple[str, str]] = []
    for artifact in task.artifacts:
        body = _parts_text(artifact.parts)
        if body:
            bodies.append((artifact.name or artifact.artifact_id, body))
    pieces: list[str] = []
    message = task.status.message
    said = message.text() if isinstance(message, Message) else ""
    if said and all(body.strip() != said.strip() for _, body in bodies):
        pieces.append(said)
    pieces += [f"[artifact {label}]\n{body}" for label, body in bodies]
    text = "\n\n".join(pieces) or "(no result)"
    if len(text) > MAX_RESULT:
        text = text[:MAX_RESULT] + f"\n[… {len(text) - MAX_RESULT} more characters cut]"
    return text


def _parts_text(parts: list[Part]) -> str:
    """Parts as text: consecutive text parts are one text (the chunks of a stream), joined
    as they are; a data part is a JSON line of its own."""
    lines: list[str] = []
    text: list[str] = []
    for part in parts:
        if isinstance(part.text, str):
            text.append(part.text)
            continue
        if part.data is not UNSET:
            lines.append("".join(text))
            text = []
            lines.append(json.dumps(part.data, sort_keys=True, ensure_ascii=False))
    lines.append("".join(text))
    return "\n".join(line for line in lines if line.strip())


def told_message(
    parent_id: str, child: str, agent: str | None, seen: Observed, result: str, agent_id: str
) -> Message:
    """The message that gives the parent a turn on a child's end: a heading, and the
    child's result (untrusted text: the model reads it as data)."""
    where = f"on {agent}" if agent else "on this agent"
    ended = seen.state if seen.state in TERMINAL_NAMES else f"{seen.state} ({seen.sub_state})"
    return Message(
        message_id=told_id(parent_id, child),
        role=MessageRole.USER,
        task_id=parent_id,
        # (the heading ends with a blank line: read as one text, it stands apart from the
        # result)
        parts=[Part(text=f"Sub-task {child} ({where}) ended: {ended}.\n\n"), Part(text=result)],
        metadata={
            PARTICIPANT_METADATA: agent_id,
            TOLD_KEY: {
                "task_id": child,
                "agent": agent,
                "state": seen.state,
                "sub_state": seen.sub_state,
            },
        },
    )


def has_message(task: Task, message_id: str) -> bool:
    return any(message.message_id == message_id for message in task.history)


# --- relaying a child's question -------------------------------------------------------------


def relay_key(child: str, question_id: str) -> str:
    return f"{child}#{question_id}"


def relay_addressee(
    parent: Task, record: ChildRecord, child: Task | None, agent_id: str
) -> str | None:
    """Whom a child's question goes to on the parent: the participant a child of this
    harness asks, when they are in the parent too; else whoever's turn made the child;
    else the parent's first reporter or admin (a person before an agent). None: nobody."""
    extension = extension_of(parent)
    if extension is None:
        return None
    present = {p.id for p in extension.participants} - {agent_id}
    if child is not None:
        asked = open_requests(child, extension_of(child))
        if asked and asked[-1].to in present:
            return asked[-1].to
    if record.asked_by in present:
        return record.asked_by
    chosen = [
        p
        for p in extension.participants
        if p.id in present and p.role in (Role.REPORTER, Role.ADMIN)
    ]
    chosen.sort(key=lambda p: p.kind != "human")
    return chosen[0].id if chosen else None


def relay_text(child: str, agent: str | None, question: str) -> str:
    where = f"on {agent}" if agent else "on this agent"
    return f"Sub-task {child} ({where}) asks: {question}"


def relays_of(parent: Task, child: str) -> list[HelpRequest]:
    """The parent's help requests that relay ``child``'s questions, oldest first."""
    prefix = child + "#"
    return [r for r in state_of(parent).requests if (r.relay or "").startswith(prefix)]


def answer_id(request: HelpRequest) -> str:
    """The id of a relayed answer as the child gets it (one per request)."""
    return f"{request.id}:answer"


def reply_of(parent: Task, request: HelpRequest) -> Message | None:
    """The participant's message that answered ``request``."""
    for message in parent.history:
        if message.message_id == request.answered_by:
            return message
    return None


def forwarded_answer(request: HelpRequest, reply: Message, child: str) -> Message:
    """The relayed answer as the child gets it: the reply's text, its sender's."""
    text = reply.text()
    parts = [Part(text=text)] if text else list(reply.parts)
    return Message(
        message_id=answer_id(request),
        role=MessageRole.USER,
        task_id=child,
        parts=parts,
        metadata={PARTICIPANT_METADATA: request.to},
    )
