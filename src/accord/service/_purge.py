"""Purging a task now (``accord admin purge``): what retention does to a task, asked for.

The caller holds the admin actor (``accord.admin.Operator``) and acts in its own tenant (the
tenant rule of :mod:`accord.service._access`). A task of another tenant, or one that does not
exist, is "not found", the answer GetTask gives; a task that has not ended is refused with
TaskStateConflict (cancel it first: a running task has an executor and followers). The task
goes through the store's one task deletion (``TaskStore.delete_terminal_tasks``), with its
log, push configs, feed entries and every store extension's rows of it.
"""

from __future__ import annotations

from accord.core import Caller
from accord.core.lifecycle import TERMINAL
from accord.service._access import in_tenant
from accord.service._operations import Service
from accord.wire import A2AError, ErrorKind, task_not_found

PURGE_GRANT = "accord.admin.PurgeTask"


async def purge_task(service: Service, caller: Caller, task_id: str, tenant: str = "") -> None:
    """Delete ``task_id`` of the caller's tenant now (the caller's grant checked before)."""
    caller = in_tenant(caller, tenant)
    store = service.engine.store
    found = await store.get_task(task_id, caller.tenant)
    if found is None:
        raise task_not_found(task_id)
    if found.state not in TERMINAL:
        raise A2AError(
            ErrorKind.TASK_STATE_CONFLICT,
            f"task {task_id!r} has not ended ({found.state.name}): cancel it before purging it",
            {"taskId": task_id},
        )
    if not await store.delete_terminal_tasks(caller.tenant, [task_id]):
        raise task_not_found(task_id)  # deleted meanwhile (retention, another purge)
