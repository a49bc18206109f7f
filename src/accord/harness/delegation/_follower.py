"""Keeping parents and their sub-tasks in step (the adapter around
:mod:`accord.harness.core._delegation`).

Whenever a child or its parent changes (the engine's commit listener, and on PostgreSQL the
other nodes' changes), the follower reads both and acts on what the core decides:

- the parent's reference to the child shows the child's state and sub-state (a stand-in's:
  its remote task's);
- a child that **ended** for its parent gives the parent a turn: a message from the harness
  on the parent (``<parent>:sub-task:<child>``, once) carrying the child's result;
- a delegated child that **asks** for input or authentication has its question relayed on
  the parent, as a help request to the participant the core chooses, once the parent is not
  in a turn; the answer is passed on to the child as a message of the one who answered
  (``<request>:answer``, once), and a relay whose question went away is withdrawn;
- a child whose parent is over (completed, canceled, failed: by anyone) is **canceled**: on
  this harness at once, on another agent there first (its stand-in follows it there).

Nothing here is state of its own: everything is read back from the tasks, and every request
it makes to the engine carries a fixed id (a retry is taken once), so a restart — ``kill -9``
included — loses nothing. At start, and every ``recovery_interval_s`` on a store shared by
several nodes, it reads every open task to find the children and stand-ins to follow.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from accord.agents import AgentError
from accord.core import TaskRecord, lifecycle
from accord.harness._moves import Who
from accord.harness._roster import Roster
from accord.harness.channels import _decisions as channel_decisions
from accord.harness.channels._desk import ChannelError, Channels
from accord.harness.channels._state import state_of
from accord.harness.core import _delegation as core
from accord.harness.core._delegation import ChildRecord, Observed
from accord.harness.core._state import extension_of, sub_state_of
from accord.harness.delegation._internal import as_harness
from accord.harness.delegation._remote import RemoteFollow
from accord.harness.delegation._stored import StoredTask
from accord.store import TaskHolds
from accord.wire import (
    A2AError,
    Message,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)

if TYPE_CHECKING:
    from accord.agents import Host
    from accord.harness.channels._outbox import DeliverySettings

log = logging.getLogger("accord.harness.delegation")

OPEN_STATES = frozenset(
    {TaskState.SUBMITTED, TaskState.WORKING, TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED}
)
SCAN_BATCH = 500
RUN_WAIT_S = 0.05  # a change to a parent a run works on waits this long to be tried again


class Follower:
    def __init__(
        self,
        engine: Host,
        agent_id: str,
        roster: Roster,
        channels: Channels,
        settings: DeliverySettings,
        push_url: str = "",
    ) -> None:
        """``push_url``: where the agents followed reach this server (``[harness]
        push_url``); empty, no push config is registered with them."""
        self.engine = engine
        self.agent_id = agent_id
        self.roster = roster
        self.channels = channels
        self.settings = settings
        self.push_url = push_url
        self._parent_of: dict[str, str] = {}  # child -> parent
        self._children: dict[str, set[str]] = {}  # parent -> children
        self._tenant: dict[str, str] = {}
        self._remote: dict[str, RemoteFollow] = {}  # stand-in -> its follow
        self._parent_seen: dict[str, tuple[object, ...]] = {}  # what a parent was, lately
        self._disowned: set[str] = set()  # tasks naming a parent that does not list them
        self._dirty: set[str] = set()
        self._wanted = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._scans: asyncio.Task[None] | None = None

    # --- life ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Follow from now on; what a restart left is found by a first scan, in the
        background (the engine's start does not wait for it)."""
        self._loop = asyncio.ensure_future(self._run(scan_first=True))
        if isinstance(self.engine.store, TaskHolds):  # (other nodes' tasks: read again)
            self._scans = asyncio.ensure_future(self._rescan(self.engine.recovery_interval_s))

    async def stop(self) -> None:
        running = [t for t in (self._loop, self._scans) if t is not None]
        running += [follow.task for follow in self._remote.values() if follow.task is not None]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        self._remote.clear()

    def committed(self, task_id: str | None) -> None:
        """A task changed (this process's commit, or another node's; None: anything)."""
        if task_id is None:
            self._dirty.update(self._parent_of, self._children)
        elif task_id in self._parent_of or task_id in self._children:
            self._dirty.add(task_id)
        else:
            return
        self._wanted.set()

    async def track(self, child_id: str, parent_id: str) -> str | None:
        """Follow ``child_id`` of ``parent_id`` from now on (a stand-in too: its remote
        task); its tenant (None: it is gone)."""
        record = await self.engine.store.get_task(child_id, None)
        if record is None:
            return None
        self._index(record.task, parent_id, record.tenant)
        self._dirty.add(child_id)
        self._wanted.set()
        return record.tenant

    async def scan(self) -> int:
        """Read every open task for the children (and stand-ins) to follow; how many."""
        found = 0
        after = ""
        while batch := await self.engine.store.tasks_in_states(OPEN_STATES, SCAN_BATCH, after):
            for record in batch:
                parent = await self._adopted(record)
                if parent is not None:
                    self._index(record.task, parent, record.tenant)
                    self._dirty.add(record.id)
                    found += 1
            after = batch[-1].id
        self._wanted.set()
        return found

    async def _adopted(self, record: TaskRecord) -> str | None:
        """The parent of a task found in the store, when it has one: a task of the same
        tenant that lists it among its sub-tasks. A task that names a parent which does
        not list it (one briefed so before the harness refused that) is nobody's child:
        it is not followed, told of, nor canceled with anything — whether the task it
        names exists or not."""
        parent_id = core.parent_of(record.task)
        if parent_id is None:
            return None
        parent = await self.engine.store.get_task(parent_id, record.tenant)
        if parent is None or not core.lists(parent.task, record.id):
            if record.id not in self._disowned:  # (said once: a scan comes back to it)
                self._disowned.add(record.id)
                log.info("task %s names a parent that does not list it: not followed", record.id)
            return None
        return parent_id

    def _index(self, child: Task, parent_id: str, tenant: str) -> None:
        self._parent_of[child.id] = parent_id
        self._children.setdefault(parent_id, set()).add(child.id)
        self._tenant[child.id] = tenant
        self._tenant.setdefault(parent_id, tenant)
        info = core.info_of(child)
        open_stand_in = info is not None and info.remote is not None and not _ended(child)
        if open_stand_in and child.id not in self._remote:
            self._follow_remote(child.id, tenant)

    def _follow_remote(self, stand_in: str, tenant: str) -> None:
        follow = self._remote[stand_in] = RemoteFollow(self, stand_in, tenant)
        follow.start(lambda: self._remote.pop(stand_in, None))

    def _forget(self, child_id: str) -> None:
        parent = self._parent_of.pop(child_id, None)
        self._tenant.pop(child_id, None)
        if parent is not None:
            siblings = self._children.get(parent)
            if siblings is not None:
                siblings.discard(child_id)
                if not siblings:
                    del self._children[parent]
                    self._parent_seen.pop(parent, None)
                    if parent not in self._parent_of:
                        self._tenant.pop(parent, None)

    async def _rescan(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.scan()
            except Exception:
                log.exception("reading the open sub-tasks failed; trying again")

    async def _run(self, *, scan_first: bool = False) -> None:
        while scan_first:
            try:
                await self.scan()
                break
            except Exception:  # (the store is briefly unavailable, say)
                log.exception("reading the open sub-tasks failed; trying again")
                await asyncio.sleep(self.settings.poll_interval_s)
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            dirty, self._dirty = self._dirty, set()
            for task_id in sorted(dirty):
                try:
                    if task_id in self._children:
                        await self._parent_changed(task_id)
                    if task_id in self._parent_of:
                        await self._child_changed(task_id)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("following sub-task %s failed; trying again later", task_id)

    # --- a parent --------------------------------------------------------------------------

    async def _parent_changed(self, parent_id: str) -> None:
        parent = await self._read(parent_id)
        children = sorted(self._children.get(parent_id, ()))
        seen = _fingerprint(parent)
        if self._parent_seen.get(parent_id) == seen:
            return  # (a change that concerns no child: an artifact chunk, say)
        self._parent_seen[parent_id] = seen
        if parent is not None and not _ended(parent):
            await self._pass_on_answers(parent)
        # Its children look again: a parent over cascades, a parent parked may be asked.
        self._dirty.update(children)
        self._wanted.set()

    async def _pass_on_answers(self, parent: Task) -> None:
        """Each answer to a relayed question goes to the child that asked (once)."""
        for child_id in sorted(self._children.get(parent.id, ())):
            for request in core.relays_of(parent, child_id):
                if request.answered_by is None:
                    continue
                child = await self._read(child_id)
                if child is None or _ended(child):
                    continue
                if core.has_message(child, core.answer_id(request)):
                    continue
                reply = core.reply_of(parent, request)
                if reply is None:
                    continue
                answer = core.forwarded_answer(request, reply, child_id)
                await self._send(answer, request.to, child_id)

    # --- a child ---------------------------------------------------------------------------

    async def _child_changed(self, child_id: str) -> None:
        parent_id = self._parent_of[child_id]
        child = await self._read(child_id)
        if child is None:
            self._forget(child_id)
            return
        info = core.info_of(child)
        remote = info.remote if info is not None else None
        if remote is not None and (len(child.history) > remote.forwarded or _ended(child)):
            self.wake_stand_in(child_id)  # (a message for the remote task, or its end here)
        parent = await self._read(parent_id)
        if core.orphaned(parent, child):
            await self.cancel_child(child)
            return
        if parent is None or _ended(parent):
            self._forget(child_id)
            return
        if self.engine.running(parent_id) and parent.status.state is not TaskState.WORKING:
            # A message just came to the parked parent (or its turn is making its last
            # writes): a change of it now would end its sender's stream before the turn.
            # Looked at again in a moment.
            asyncio.get_running_loop().call_later(RUN_WAIT_S, self.committed, child_id)
            return
        record = core.children_of(parent).get(child_id) or _unrecorded(child)
        seen = core.observed(child)
        tenant = self._tenant[child_id]
        stored = StoredTask(self.engine, parent_id, tenant)
        with contextlib.suppress(AgentError):
            await stored.decide(lambda rec, now: core.seen_changed(rec, now, child_id, seen))
        meaning = core.child_meaning(record.kind, child, seen)
        await self._withdraw(stored, parent, child_id, seen if meaning == "asking" else None)
        if meaning == "ended":
            await self._tell(parent, child, record, seen)
            if _ended(child):
                self._forget(child_id)
        elif meaning == "asking" and seen.question is not None:
            await self._relay(stored, parent, child, record, seen)

    async def _tell(self, parent: Task, child: Task, record: ChildRecord, seen: Observed) -> None:
        """The parent's turn on the child's end (once: the message's id is fixed)."""
        if core.has_message(parent, core.told_id(parent.id, child.id)):
            return
        told = core.told_message(
            parent.id, child.id, record.agent, seen, core.result_text(child), self.agent_id
        )
        await self._send(told, self.agent_id, parent.id)

    async def _relay(
        self, stored: StoredTask, parent: Task, child: Task, record: ChildRecord, seen: Observed
    ) -> None:
        """The child's question as a help request on the parent, once, when the parent is
        not in a turn (asking would end it)."""
        question = seen.question
        assert question is not None
        if parent.status.state not in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED):
            return  # (asked when the turn parks: the parent's change brings us back)
        key = core.relay_key(child.id, question.id)
        if any(request.relay == key for request in core.relays_of(parent, child.id)):
            return
        to = core.relay_addressee(parent, record, child, self.agent_id)
        if to is None:
            log.info("sub-task %s asks, and nobody on %s can answer", child.id, parent.id)
            return
        extension = extension_of(parent)
        who = Who.on(extension, record.asked_by or self.agent_id)
        text = core.relay_text(child.id, record.agent, question.text)
        try:
            await self.channels.ask(stored, who, to, text, relay=key)
        except ChannelError as exc:
            log.info("sub-task %s's question not relayed on %s: %s", child.id, parent.id, exc)

    async def _withdraw(
        self, stored: StoredTask, parent: Task, child_id: str, seen: Observed | None
    ) -> None:
        """Relays of questions the child no longer asks are withdrawn."""
        asking = core.relay_key(child_id, seen.question.id) if seen and seen.question else None
        stale = {
            r.id
            for r in core.relays_of(parent, child_id)
            if r.answered_by is None and r.relay != asking
        }
        if not stale:
            return
        text = f"Sub-task {child_id} no longer asks; its question is withdrawn."
        with contextlib.suppress(AgentError):
            await stored.decide(lambda rec, now: channel_decisions.withdrawn(rec, now, stale, text))

    async def cancel_child(self, child: Task) -> None:
        """A child whose parent is over: canceled (a stand-in's remote task first)."""
        info = core.info_of(child)
        if info is not None and info.remote is not None:
            follow = self._remote.get(child.id)
            if follow is None:
                self._follow_remote(child.id, self._tenant.get(child.id, ""))
            else:
                follow.wake()
            return
        tenant = self._tenant.get(child.id, "")
        with contextlib.suppress(A2AError):
            await self.engine.cancel_task(child.id, as_harness(self.agent_id, tenant), guard=False)
        self._forget(child.id)

    async def pushed(self, stand_in: str) -> None:
        """The agent of ``stand_in`` pushed a change (its token checked): its follow reads
        the task there now — one started first if this process follows it not yet (its
        first scan not done, another node's stand-in)."""
        follow = self._remote.get(stand_in)
        if follow is None:
            record = await self.engine.store.get_task(stand_in, None)
            if record is None or _ended(record.task):
                return
            parent = await self._adopted(record)
            if parent is None:
                return
            self._index(record.task, parent, record.tenant)
            follow = self._remote.get(stand_in)
        if follow is not None:
            follow.ring()

    def wake_stand_in(self, task_id: str) -> None:
        """A stand-in changed in a way its follow acts on (a message to pass on)."""
        follow = self._remote.get(task_id)
        if follow is not None:
            follow.wake()

    # --- the parts ---------------------------------------------------------------------------

    async def _read(self, task_id: str) -> Task | None:
        tenant = self._tenant.get(task_id)
        if tenant is None:
            found = await self.engine.store.get_task(task_id, None)
        else:
            found = await self.engine.read_task(task_id, tenant)
        return found.task if found is not None else None

    async def _send(self, message: Message, identity: str, task_id: str) -> None:
        """``message`` to the engine, as the harness speaking as ``identity``, returned as
        soon as it is stored (a retry of the same id is taken once)."""
        request = SendMessageRequest(
            message=message, configuration=SendMessageConfiguration(return_immediately=True)
        )
        caller = as_harness(identity, self._tenant.get(task_id, ""))
        try:
            await self.engine.send_message(request, caller)
        except A2AError as exc:  # (the task ended meanwhile, say: nothing to tell)
            log.info("message %s to %s not taken: %s", message.message_id, task_id, exc.message)


def _unrecorded(child: Task) -> ChildRecord:
    """A child its parent has no record of (a ``/sub-task``): as its own info says."""
    info = core.info_of(child)
    return ChildRecord(kind=info.kind if info is not None else "conversation")


def _fingerprint(task: Task | None) -> tuple[object, ...]:
    """What of a parent its children care about: its state and sub-state, its children's
    references and its relayed questions' answers."""
    if task is None:
        return (None,)
    extension = extension_of(task)
    refs = extension.sub_tasks if extension is not None else ()
    relays = tuple((r.id, r.answered_by) for r in state_of(task).requests if r.relay)
    return (task.status.state, sub_state_of(task), refs, relays)


def _ended(task: Task) -> bool:
    state = task.status.state
    return isinstance(state, TaskState) and lifecycle.is_terminal(state)
