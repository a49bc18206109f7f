"""The four views under ``GET /tasks/views/…``: every row, scoped to the caller's tenant."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from accord.agents import Access
from accord.core import SEED_STATE_NAMES, Caller, PushConfigRecord, TaskRecord
from accord.core.views import TaskQuery
from accord.store import TaskStore
from accord.surface._handlers import InputError
from accord.wire import UNSET, Task, TaskState, parse_timestamp, to_builtins

STATE_BY_SEED_NAME = {name: state for state, name in SEED_STATE_NAMES.items()}
PAGE = 100


def _tenant(caller: Caller, param: str | None) -> str | None:
    """The tenant whose rows the caller reads, or None when it names one it cannot see."""
    if param is None or param == caller.tenant:
        return caller.tenant
    if caller.authenticated:
        return None  # another tenant's rows are not this caller's to read
    return param


async def _records(store: TaskStore, query: TaskQuery) -> AsyncIterator[TaskRecord]:
    while True:
        page = await store.list_tasks(query)
        for record in page.records:
            yield record
        if page.next_cursor is None:
            return
        query = TaskQuery(
            tenant=query.tenant,
            context_id=query.context_id,
            status=query.status,
            updated_after_ms=query.updated_after_ms,
            page_size=PAGE,
            after=page.next_cursor,
        )


def _status_fields(record: TaskRecord, camel: bool) -> dict[str, Any]:
    task = record.task
    row: dict[str, Any] = {}
    if task.status.message is not UNSET:
        row["statusMessage" if camel else "status_message"] = to_builtins(task.status.message)
    if task.status.timestamp:
        row["statusTimestamp" if camel else "status_timestamp"] = task.status.timestamp
    row["artifacts"] = to_builtins(task.artifacts)
    row["history"] = to_builtins(task.history)
    if task.metadata is not UNSET:
        row["metadata"] = to_builtins(task.metadata)
    return row


# Whether the agent lets the caller make an operation on a task (Engine.allows): a client's
# view shows only what GetTask and ListTasks would (the harness's membership boundary).
Allows = Callable[[Access, Task], bool]


def _everything(operation: Access, task: Task) -> bool:
    return True


async def tasks_view(
    store: TaskStore, caller: Caller, params: dict[str, str], allows: Allows = _everything
) -> list[Any]:
    """``a2a.tasks.Tasks``: contextId, status (a seed state name), statusTimestampAfter."""
    tenant = _tenant(caller, params.get("tenant"))
    status: TaskState | None = None
    if "status" in params:
        status = STATE_BY_SEED_NAME.get(params["status"])
        if status is None:
            raise InputError(
                "unknown status",
                [{"field": "status", "message": f"one of {sorted(STATE_BY_SEED_NAME)}"}],
            )
    after_ms = None
    if "statusTimestampAfter" in params:
        try:
            after_ms = parse_timestamp(params["statusTimestampAfter"])
        except ValueError as exc:
            errors = [{"field": "statusTimestampAfter", "message": str(exc)}]
            raise InputError(str(exc), errors) from None
    if tenant is None:
        return []
    query = TaskQuery(
        tenant=tenant,
        context_id=params.get("contextId", ""),
        status=status,
        updated_after_ms=after_ms,
        page_size=PAGE,
    )
    rows = []
    async for record in _records(store, query):
        if not allows("read", record.task):
            continue
        row = {
            "id": record.id,
            "contextId": record.task.context_id,
            "state": SEED_STATE_NAMES[record.state],
        }
        row.update(_status_fields(record, camel=True))
        rows.append(row)
    return rows


async def all_tasks_view(store: TaskStore, caller: Caller) -> list[Any]:
    """``a2a.tasks.AllTasks`` (the Agent's view): every task of the caller's tenant."""
    rows = []
    async for record in _records(store, TaskQuery(tenant=caller.tenant, page_size=PAGE)):
        row = {
            "id": record.id,
            "context_id": record.task.context_id,
            "tenant": record.tenant,
            "state": SEED_STATE_NAMES[record.state],
        }
        row.update(_status_fields(record, camel=False))
        rows.append(row)
    return rows


def _config_row(record: PushConfigRecord, full: bool) -> dict[str, Any]:
    config = record.config
    row: dict[str, Any] = {
        "config_id": config.id,
        "task_id": config.task_id,
        "tenant": record.tenant,
        "url": config.url,
    }
    if config.token:
        row["token"] = config.token
    if config.authentication is not UNSET:
        row["authentication"] = to_builtins(config.authentication)
    if full:
        row["row"] = f"{config.task_id}/{config.id}"
        row["state"] = "Active"
    return row


async def task_push_configs_view(
    store: TaskStore, caller: Caller, params: dict[str, str], allows: Allows = _everything
) -> list[Any]:
    """``a2a.tasks.TaskPushNotificationConfigs``: the configs of one task (``task_id``)."""
    task_id = params.get("task_id")
    if not task_id:
        raise InputError("task_id is required", [{"field": "task_id", "message": "required"}])
    tenant = _tenant(caller, params.get("tenant"))
    record = await store.get_task(task_id, tenant) if tenant is not None else None
    if record is None or not allows("push-config", record.task):
        return []
    return [_config_row(r, full=False) for r in await store.list_push_configs(task_id)]


async def all_push_configs_view(store: TaskStore, caller: Caller) -> list[Any]:
    """``a2a.tasks.PushNotificationConfigs`` (the Agent's view), of the caller's tenant."""
    rows: list[Any] = []
    after = ("", "")
    while True:
        batch = await store.all_push_configs(500, after)
        if not batch:
            return rows
        rows += [_config_row(r, full=True) for r in batch if r.tenant == caller.tenant]
        last = batch[-1].config
        after = (last.task_id, last.id)
