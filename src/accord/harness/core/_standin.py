"""A stand-in: the task on this harness that stands for a delegated child on another agent
of the roster (pure decisions). It keeps the remote task's state in its metadata
(:class:`~accord.harness.core._delegation.RemoteState`) while that task is open, and ends as
it did, with its artifacts and final status message, so that its parent reads it as any
child of this harness.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import msgspec

from accord.core import Outcome, TaskRecord, lifecycle
from accord.core import agent as moves
from accord.harness.core import _conversation as conversation
from accord.harness.core._delegation import (
    ChildInfo,
    PushState,
    Question,
    RemoteState,
    info_of,
    with_info,
)
from accord.wire import Artifact

Change = Callable[[RemoteState], RemoteState]


def remote_of(record: TaskRecord | None) -> RemoteState | None:
    info = info_of(record.task) if record is not None else None
    return info.remote if info is not None else None


def mirrored(record: TaskRecord | None, now_ms: int, change: Change) -> Outcome:
    """A stand-in's record of its remote task changed by ``change`` (what was seen of it
    lately; unchanged when that changes nothing, or the stand-in is over)."""
    remote = remote_of(record)
    if record is None or remote is None or lifecycle.is_terminal(record.state):
        return Outcome("unchanged", record=record)
    changed = change(remote)
    if changed == remote:
        return Outcome("unchanged", record=record)
    info = msgspec.structs.replace(info_of(record.task) or ChildInfo(), remote=changed)
    return moves.set_metadata(record, with_info(record.task.metadata, info), now_ms)


def seen(state: str, sub_state: str | None, question: Question | None, task_id: str = "") -> Change:
    """The remote task seen in ``state`` (asking ``question``, if any), reachable."""

    def change(remote: RemoteState) -> RemoteState:
        return msgspec.structs.replace(
            remote,
            task_id=task_id or remote.task_id,
            state=state,
            sub_state=sub_state,
            question=question,
            error="",
        )

    return change


def unreachable(error: str) -> Change:
    def change(remote: RemoteState) -> RemoteState:
        return msgspec.structs.replace(remote, error=error)

    return change


def passed_on(count: int) -> Change:
    """The stand-in's first ``count`` messages are with the remote task."""

    def change(remote: RemoteState) -> RemoteState:
        return msgspec.structs.replace(remote, forwarded=max(remote.forwarded, count))

    return change


def push_begun(token_sha256: str, now_ms: int, stale_ms: int) -> Change:
    """A push registration begins with a new token's hash — unless one is registered or
    refused already, or another began less than ``stale_ms`` ago (another node's, under
    way: a registration whose node died is taken over after that)."""

    def change(remote: RemoteState) -> RemoteState:
        push = remote.push
        if push is not None and (
            push.registered or push.refused or now_ms - push.since_ms < stale_ms
        ):
            return remote
        begun = PushState(token_sha256=token_sha256, since_ms=now_ms)
        return msgspec.structs.replace(remote, push=begun)

    return change


def push_ended(token_sha256: str, refused: str = "") -> Change:
    """The registration of the token ``token_sha256`` is over: taken by the agent, or
    refused saying why (unchanged when another registration replaced it meanwhile)."""

    def change(remote: RemoteState) -> RemoteState:
        push = remote.push
        if push is None or push.token_sha256 != token_sha256:
            return remote
        ended = msgspec.structs.replace(push, registered=not refused, refused=refused)
        return msgspec.structs.replace(remote, push=ended)

    return change


def finished(
    record: TaskRecord | None,
    now_ms: int,
    remote: RemoteState,
    status_text: str,
    artifacts: tuple[Artifact, ...] = (),
) -> Outcome:
    """A stand-in ends as its remote task did: its artifacts copied, its final status
    message as the stand-in's (COMPLETED for a peer's conversation that answered; a
    rejection is FAILED here, saying so)."""
    if record is None or lifecycle.is_terminal(record.state):
        return Outcome("unchanged", record=record)
    move = {"COMPLETED": "complete", "CANCELED": "cancel", "FAILED": "fail"}.get(
        remote.state, "fail" if remote.state == "REJECTED" else "complete"
    )
    text = status_text or f"{remote.agent}: {remote.state}"
    if remote.state == "REJECTED":
        text = f"rejected by {remote.agent}: {text}"
    last = seen(remote.state, remote.sub_state, None, remote.task_id)
    steps: list[conversation.Decision] = [partial(mirrored, change=last)]
    if move == "complete" and record.state in lifecycle.INTERRUPTED:
        steps.append(conversation.start_turn)
    for artifact in artifacts:
        steps.append(partial(_copied, artifact=artifact))

    def ended(rec: TaskRecord | None, now: int) -> Outcome:
        return moves.move(rec, move, now, conversation.agent_text(rec, text))

    steps.append(ended)
    return conversation.chain(record, now_ms, tuple(steps))


def _copied(record: TaskRecord | None, now_ms: int, artifact: Artifact) -> Outcome:
    return moves.update_artifact(record, artifact, now_ms, last_chunk=True)
