"""Making sub-tasks from inside a run on their parent: ``spawn_subtask``'s delegated children
and ``create_task_for_participant``'s, with ``subtask.spawned`` around each.

::

    child = await agent.delegation.spawn(task, who, Brief("venues", "three venues in Lyon"))
    child = await agent.delegation.spawn(task, who, brief, agent="researcher")
    child = await agent.delegation.create_task_for_participant(task, who, "bob", brief)

Each child is first **reserved** on its parent — its reference (``<parent>.<n>``) and record
in one append, checked against the bounds — then made under that id, so a call run again
after a crash finds the child it made instead of making a second. A delegated child on this
harness starts its turn on the brief at once; one on a roster agent is a stand-in here that
the follower (accord.harness.delegation._follower) hands to the agent and keeps in step; a
participant's child waits for its assignee's message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from functools import partial
from typing import TYPE_CHECKING

import msgspec

from accord.agents import AgentError, TaskHandle
from accord.errors import AccordError
from accord.harness._moves import Moves, Who
from accord.harness._wire import PARTICIPANT_METADATA, Role, SubState, TaskExtension
from accord.harness.core import _conversation as conversation
from accord.harness.core._delegation import (
    Bounds,
    Brief,
    ChildInfo,
    ChildRecord,
    Kind,
    RemoteState,
    delegated_extension,
    depth_of,
    info_of,
    next_child_id,
    over_bounds,
    parent_of,
    participant_extension,
    reserve,
    with_info,
)
from accord.harness.core._fields import FieldError
from accord.harness.core._fields import check_brief as check_brief_fields
from accord.harness.core._state import extension_of, metadata_with
from accord.harness.core._subtasks import child_extension
from accord.harness.hooks._base import HookAbort
from accord.harness.hooks._operations import SUBTASK_SPAWNED, SubtaskSpawned
from accord.harness.hooks._registry import Hooks
from accord.wire import Message, Part, Task
from accord.wire import Role as MessageRole

if TYPE_CHECKING:
    from accord.agents import Host
    from accord.harness.delegation._follower import Follower

log = logging.getLogger("accord.harness.delegation")

SELF = "self"  # spawn_subtask's name for this harness (tiny-harness's)
MAX_TAKEN = 8  # ids found taken by other children, in a row, before giving up


class DelegationError(AccordError, ValueError):
    """A sub-task cannot be made; the reason says why (nothing was made)."""


class Delegation:
    def __init__(
        self,
        hooks: Hooks,
        moves: Moves,
        agent_id: str,
        roster: Collection[str],
        bounds: Bounds,
    ) -> None:
        self.hooks = hooks
        self.moves = moves
        self.agent_id = agent_id
        self.roster = frozenset(roster)
        self.bounds = bounds
        self.engine: Host | None = None
        self.follower: Follower | None = None

    def attach(self, engine: Host, follower: Follower) -> None:
        self.engine = engine
        self.follower = follower

    # --- delegated children --------------------------------------------------------------

    async def spawn(
        self,
        task: TaskHandle,
        who: Who,
        brief: Brief,
        *,
        agent: str | None = None,
        call: str = "",
        step: str | None = None,
    ) -> str:
        """A delegated child of ``task`` on this harness (``agent`` None or ``"self"``) or
        on roster agent ``agent``, briefed with ``brief``; its id. ``who`` is whom the run is
        for (relayed questions go to them); ``call`` the tool call that asks (a call run
        again finds its child); ``step`` a step of the plan to link it to."""
        if self.engine is None or self.follower is None:
            raise DelegationError("sub-tasks need the harness attached to its engine")
        remote = None if agent in (None, SELF, self.agent_id) else agent
        if remote is not None and remote not in self.roster:
            listed = ", ".join(sorted(self.roster)) or "none"
            raise DelegationError(f"no agent {remote!r} on the roster (agents: {listed})")
        check_brief(brief)
        parent, extension = await _parent(task)
        context = _spawning(who, parent.id, "delegated", brief, agent=remote)
        context, brief = await self._before(context)
        record = ChildRecord(kind="delegated", agent=remote, call=call, asked_by=who.sender)
        child = delegated_extension(parent.id, extension, brief, self.agent_id)
        info = ChildInfo(
            depth=depth_of(parent) + 1,
            kind="delegated",
            remote=RemoteState(agent=remote) if remote is not None else None,
        )
        then = None
        if remote is not None:  # (parked: the follower hands it to the agent)
            waiting = SubState.AWAITING_SUBTASKS.value
            then = partial(conversation.park, message=f"Sent to {remote}.", sub_state=waiting)
        child_id, made = await self._reserve_and_create(
            task, record, step, child, info, lambda i: _brief_message(i, brief, self.agent_id), then
        )
        created = made is not None
        if made is not None:
            await self.moves.created(made, Who(who.sender, Role.ASSIGNEE, who.correlation_id))
        await self._after(context, child_id)
        tenant = await self.follower.track(child_id, parent.id)
        if created and remote is None and tenant is not None:
            await self.engine.run_task(child_id, tenant)  # its turn on the brief, now
        return child_id

    # --- participants' children ----------------------------------------------------------

    async def create_task_for_participant(
        self,
        task: TaskHandle,
        who: Who,
        participant_id: str,
        brief: Brief,
        *,
        call: str = "",
        step: str | None = None,
    ) -> str:
        """A child of ``task`` assigned to its participant ``participant_id``: it waits for
        their message, which completes it (and gives the parent a turn); its id."""
        if self.engine is None or self.follower is None:
            raise DelegationError("sub-tasks need the harness attached to its engine")
        check_brief(brief)
        parent, extension = await _parent(task)
        if participant_id == self.agent_id:
            raise DelegationError("the harness does not assign itself a task: spawn_subtask")
        if extension.participant(participant_id) is None:
            raise DelegationError(f"{participant_id!r} is not a participant of the task")
        context = _spawning(who, parent.id, "participant", brief, assignee=participant_id)
        context, brief = await self._before(context)
        record = ChildRecord(kind="participant", call=call, asked_by=who.sender)
        child = participant_extension(parent.id, extension, brief, participant_id, self.agent_id)
        info = ChildInfo(depth=depth_of(parent) + 1, kind="participant")
        asked = f"@{participant_id} {brief.text()}"
        child_id, made = await self._reserve_and_create(
            task, record, step, child, info, None, partial(conversation.park, message=asked)
        )
        if made is not None:
            await self.moves.created(made, Who(who.sender, Role.REPORTER, who.correlation_id))
        await self._after(context, child_id)
        await self.follower.track(child_id, parent.id)
        return child_id

    # --- conversations (/sub-task) -------------------------------------------------------

    async def open_conversation(self, task: TaskHandle, who: Who, goal: str) -> Task:
        """A child conversation of ``task`` on this harness, parked until its first message
        (``/sub-task``): ``who`` its reporter, the harness its assignee. The caller links it
        to the parent (after its answer: a change of a parked task before the answer would
        end the stream of whoever asked), so it is not reserved first: it takes the next
        ``<parent>.<n>`` no task holds yet (a spawn that reserved the same id meanwhile
        finds it taken and reserves another)."""
        parent, extension = await _parent(task)
        problem = over_bounds(parent, self.bounds)
        if problem is not None:
            raise DelegationError(problem)
        child = child_extension(parent.id, extension, goal, who.sender, self.agent_id)
        context = _spawning(who, parent.id, "conversation", Brief(child.name, goal))
        context, brief = await self._before(context)
        child = msgspec.structs.replace(child, name=brief.name, goal=brief.goal)
        info = ChildInfo(depth=depth_of(parent) + 1, kind="conversation")
        metadata = with_info(metadata_with({}, child), info)
        taken: set[str] = set()
        for _ in range(MAX_TAKEN):
            current, now = await _parent(task)
            child_id = next_child_id(current.id, now, taken)
            try:
                made = await task.create_task(
                    task_id=child_id, metadata=metadata, then=conversation.park
                )
                break
            except AgentError as exc:
                if await task.get_task(child_id) is None:
                    raise DelegationError(f"the sub-task could not be made: {exc}") from None
                taken.add(child_id)
        else:
            raise DelegationError("no free sub-task id was found; try again")
        await self.moves.created(made, Who(who.sender, Role.REPORTER, who.correlation_id))
        await self._after(context, made.id)
        if self.follower is not None:
            await self.follower.track(made.id, parent.id)
        return made

    # --- the parts ---------------------------------------------------------------------------

    async def _reserve_and_create(
        self,
        task: TaskHandle,
        record: ChildRecord,
        step: str | None,
        extension: TaskExtension,
        info: ChildInfo,
        message: Callable[[str], Message] | None,
        then: conversation.Decision | None,
    ) -> tuple[str, Task | None]:
        """The child reserved on its parent, then made under its id; its id, and the child
        (None: a call run again found it made already). An id a ``/sub-task`` took meanwhile
        is given up for the next."""
        taken: set[str] = set()
        for _ in range(MAX_TAKEN):
            child_id = await self._reserve(task, record, step, taken)
            existing = await task.get_task(child_id)
            if existing is None:
                first = message(child_id) if message is not None else None
                made = await self._create(task, child_id, extension, info, first, then)
                if made is not None:
                    return child_id, made
                existing = await task.get_task(child_id)
            if existing is not None and _made_by(existing, task.task_id, record):
                return child_id, None
            taken.add(child_id)
        raise DelegationError("no free sub-task id was found; try again")

    async def _reserve(
        self, task: TaskHandle, record: ChildRecord, step: str | None, taken: Collection[str]
    ) -> str:
        made: list[str] = []
        try:
            await task.decide(
                partial(
                    reserve, child=record, bounds=self.bounds, made=made, step=step, taken=taken
                )
            )
        except AgentError as exc:
            raise DelegationError(str(exc)) from None
        return made[0]

    async def _create(
        self,
        task: TaskHandle,
        child_id: str,
        extension: TaskExtension,
        info: ChildInfo,
        message: Message | None,
        then: conversation.Decision | None,
    ) -> Task | None:
        """The child, made; None when a task of its id exists already (a call run again)."""
        metadata = with_info(metadata_with({}, extension), info)
        try:
            return await task.create_task(
                task_id=child_id, metadata=metadata, message=message, then=then
            )
        except AgentError as exc:
            if await task.get_task(child_id) is not None:
                return None
            raise DelegationError(f"the sub-task could not be made: {exc}") from None

    async def _before(self, context: SubtaskSpawned) -> tuple[SubtaskSpawned, Brief]:
        """``subtask.spawned.pre``: the brief as the hooks leave it (a HookAbort refuses)."""
        brief = Brief(context.name, context.goal, context.description, context.acceptance_criteria)
        if not self.hooks.wants(SUBTASK_SPAWNED):
            return context, brief
        try:
            context = await self.hooks.run(SUBTASK_SPAWNED.points[0], context)
        except HookAbort as abort:
            raise DelegationError(f"sub-task refused: {abort.message}") from None
        brief = Brief(
            context.name, context.goal, context.description, tuple(context.acceptance_criteria)
        )
        check_brief(brief)
        return context, brief

    async def _after(self, context: SubtaskSpawned, child_id: str) -> None:
        """``subtask.spawned.in`` and ``post``, once the child is made: told, not asked (an
        abort is logged; the child stands)."""
        if not self.hooks.wants(SUBTASK_SPAWNED):
            return
        _, body, post = SUBTASK_SPAWNED.points
        context = msgspec.structs.replace(context, child_id=child_id)
        try:
            await self.hooks.run(post, await self.hooks.run(body, context))
        except HookAbort as abort:
            log.warning("subtask.spawned on %s: %s (the sub-task stands)", child_id, abort)


def _spawning(
    who: Who,
    parent_id: str,
    kind: Kind,
    brief: Brief,
    *,
    agent: str | None = None,
    assignee: str | None = None,
) -> SubtaskSpawned:
    """The ``subtask.spawned`` context of a child about to be made."""
    return SubtaskSpawned(
        **who.fields(parent_id),
        kind=kind,
        name=brief.name,
        goal=brief.goal,
        description=brief.description,
        acceptance_criteria=brief.acceptance_criteria,
        agent=agent,
        assignee=assignee,
    )


def _made_by(existing: Task, parent_id: str, record: ChildRecord) -> bool:
    """Whether ``existing`` is the child ``record`` reserved (made by the same call before
    a crash), not another child that took its id."""
    info = info_of(existing)
    return info is not None and info.kind == record.kind and parent_of(existing) == parent_id


def check_brief(brief: Brief) -> None:
    """DelegationError naming what is wrong with a brief (the rules a task envelope's
    brief follows too: accord.harness.core._fields)."""
    try:
        check_brief_fields(brief.name, brief.goal, brief.description, brief.acceptance_criteria)
    except FieldError as exc:
        raise DelegationError(str(exc)) from None


async def _parent(task: TaskHandle) -> tuple[Task, TaskExtension]:
    current = await task.current()
    extension = extension_of(current)
    if extension is None:
        raise DelegationError(f"task {current.id} is not a conversation of this harness")
    return current, extension


def _brief_message(child_id: str, brief: Brief, agent_id: str) -> Message:
    """A delegated child's first message: its brief, from the harness."""
    return Message(
        message_id=f"{child_id}:brief",
        role=MessageRole.USER,
        parts=[Part(text=brief.text())],
        metadata={PARTICIPANT_METADATA: agent_id},
    )
