"""The harness's own participant id is nobody else's: in open mode a client asserting it (the
header, or the message's metadata) is not the trusted harness — its new message is refused,
and to it every task is as unknown as an id that names none."""

from __future__ import annotations

import pytest
from tests.harness.engine_kit import ALICE, envelope, request, running, said, send

from accord.core._caller import Caller
from accord.wire import A2AError, ErrorKind
from accord.wire._model import ListTasksRequest, Part, TaskState


def brief(**payload: object) -> list[Part]:
    data = {"kind": "task", "payload": {"name": "n", "goal": "g", **payload}}
    return [Part(text="hello"), envelope(data)]


async def test_in_open_mode_no_client_speaks_as_the_harness() -> None:
    async with running() as (engine, _):
        harness = Caller(participant="accord")
        # As the harness, a client would be a trusted delegator: its brief is refused.
        with pytest.raises(A2AError) as refused:
            await send(engine, harness, brief(lifecycle="delegated"))
        error = refused.value
        assert error.kind is ErrorKind.PERMISSION_DENIED
        assert "accord" in error.message and "the harness" in error.message
        in_metadata = request(brief(lifecycle="delegated"))
        in_metadata.message.metadata = {"participant_id": "accord"}
        with pytest.raises(A2AError) as refused:
            await engine.send_message(in_metadata, Caller())
        assert refused.value.kind is ErrorKind.PERMISSION_DENIED
        # Nor does a principal an operator named so (the harness's requests carry an actor
        # no authentication grants).
        named_so = Caller(identity="accord", authenticated=True)
        with pytest.raises(A2AError) as refused:
            await send(engine, named_so, brief(lifecycle="delegated"))
        assert refused.value.kind is ErrorKind.PERMISSION_DENIED
        # The harness is a participant of every task: reading as it sees none, exactly as
        # an unknown id is not found (nothing tells which tasks exist).
        task = await send(engine, ALICE, "hello")
        with pytest.raises(A2AError) as unseen:
            await engine.get_task(task.id, harness)
        with pytest.raises(A2AError) as unknown:
            await engine.get_task("no-such-task", harness)
        assert unseen.value.kind is unknown.value.kind is ErrorKind.TASK_NOT_FOUND
        assert (await engine.list_tasks(ListTasksRequest(), harness)).tasks == []
        # A message to an existing task as the harness: the unknown-task error too.
        with pytest.raises(A2AError) as refused:
            await send(engine, harness, "hi", task.id)
        error = refused.value
        assert error.kind is ErrorKind.TASK_NOT_FOUND
        with pytest.raises(A2AError) as canceled:
            await engine.cancel_task(task.id, harness)
        assert canceled.value.kind is ErrorKind.TASK_NOT_FOUND
        assert (await engine.get_task(task.id, ALICE)).status.state is TaskState.INPUT_REQUIRED
        assert said(await engine.get_task(task.id, ALICE)).endswith("hello")
