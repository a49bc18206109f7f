"""Client commands: SendMessage, GetTask, CancelTask, SubscribeToTask, the four push-config
commands and GetExtendedAgentCard, each returning the seed's outcome.

Another tenant's task is "not found" to the caller (the ``other-tenant`` outcome carries the
same TaskNotFoundError as ``not-found``). Checks common to every command (version, extensions,
streaming capability) live in :mod:`accord.core.negotiation` and run before these.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from accord.core import lifecycle
from accord.core._build import append, timestamp
from accord.core._events import Event
from accord.core._limits import Limits
from accord.core._outcome import Outcome, Published, refused
from accord.core._records import PushConfigRecord, TaskRecord
from accord.core.agent import move
from accord.wire import (
    UNSET,
    A2AError,
    ErrorKind,
    Message,
    Part,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    invalid_params,
    task_not_found,
    to_builtins,
)


def _visible(record: TaskRecord | None, tenant: str) -> str | None:
    """None when the caller may see the task; else the refusal's outcome name."""
    if record is None:
        return "not-found"
    if record.tenant != tenant:
        return "other-tenant"
    return None


# --- SendMessage ---------------------------------------------------------------------------


def part_media_type(part: Part) -> str:
    if part.media_type:
        return part.media_type
    if part.text is not msgspec.UNSET:
        return "text/plain"
    if part.data is not msgspec.UNSET:
        return "application/json"
    return "application/octet-stream"


def media_type_accepted(media_type: str, accepted: Sequence[str]) -> bool:
    kind = media_type.split(";", 1)[0].strip().lower()
    major = kind.split("/", 1)[0]
    for mode in accepted:
        mode = mode.split(";", 1)[0].strip().lower()
        if mode in ("*/*", "*", kind) or mode == f"{major}/*":
            return True
    return False


def send_message(
    request: SendMessageRequest,
    *,
    tenant: str,
    task: TaskRecord | None,
    tenant_task_count: int,
    now_ms: int,
    new_task_id: str,
    new_context_id: str,
    limits: Limits,
    accept_client_context_ids: bool = True,
    input_modes: Sequence[str] | None = None,
    streaming: bool = False,
    streaming_supported: bool = True,
    message: Message | None = None,
    task_metadata: dict[str, Any] | None = None,
    generations: bool = False,
) -> Outcome:
    """SendMessage / SendStreamingMessage up to the agent's answer.

    ``task`` is the stored task ``message.taskId`` names (None if there is none or the message
    names none). ``input_modes``, when given, is a hard filter on part media types.
    ``streaming`` marks SendStreamingMessage: refused without the capability, and its accepted
    outcomes also publish the first ``a2a.tasks.MessageStreamResponse``.

    What an agent's intake admitted (accord.agents._api.Admit) comes as ``message``, the
    message as it is to be stored (default: the request's), and ``task_metadata``, the
    task's metadata with it: a new task's own, or an existing task's replacement, logged
    after the message as a task snapshot.

    ``generations`` (the A2A 1.1 preview): a new task counts generations from 1. A message
    whose configuration carries ``ifGenerationMatch`` is refused unless the task it continues
    is at that generation (the binding leaves the field out without the preview).
    """
    if streaming and not streaming_supported:
        error = A2AError(ErrorKind.UNSUPPORTED_OPERATION, "this agent does not stream")
        return refused("streaming-not-supported", error)
    message = message or request.message
    if input_modes is not None:
        for index, part in enumerate(message.parts):
            media_type = part_media_type(part)
            if not media_type_accepted(media_type, input_modes):
                error = A2AError(
                    ErrorKind.CONTENT_TYPE_NOT_SUPPORTED,
                    f"media type {media_type!r} of part {index} is not accepted",
                    {"mediaType": media_type},
                )
                return refused("content-type-not-supported", error)

    if message.task_id:
        if _visible(task, tenant) is not None or task is None:
            return refused("task-not-found", task_not_found(message.task_id))
        if lifecycle.is_terminal(task.state):
            error = A2AError(
                ErrorKind.UNSUPPORTED_OPERATION,
                f"task {task.id!r} is {task.state.value} and takes no more messages",
                {"taskId": task.id, "state": task.state.value},
            )
            return refused("task-terminal", error)
        if message.context_id and message.context_id != task.task.context_id:
            error = A2AError(
                ErrorKind.CONTEXT_MISMATCH,
                f"message.contextId {message.context_id!r} is not the context of task {task.id!r}",
                {"taskId": task.id},
            )
            error.violations.append(
                invalid_params("message.contextId", "differs from the task's").violations[0]
            )
            return refused("context-mismatch", error)
        mismatch = _generation_mismatch(request, task)
        if mismatch is not None:
            return refused("generation-mismatch", mismatch)
        limit = limits.messages_per_task
        if limit is not None and len(task.task.history) >= limit:
            error = A2AError(
                ErrorKind.RESOURCE_EXHAUSTED,
                f"task {task.id!r} already holds {limit} messages",
                {"limit": str(limit), "taskId": task.id},
            )
            return refused("history-limit", error)
        bound = msgspec.structs.replace(message, task_id=task.id, context_id=task.task.context_id)
        new, event = append(task, "message", bound, now_ms)
        events = [event]
        if task_metadata is not None and task_metadata != new.task.metadata:
            snapshot = msgspec.structs.replace(new.task, metadata=task_metadata)
            new, changed = append(new, "task", snapshot, now_ms)
            events.append(changed)
        published = [stream_published(StreamResponse(task=new.task))] if streaming else []
        return Outcome("continued", events=events, record=new, published=published)

    if message.context_id and not accept_client_context_ids:
        error = A2AError(
            ErrorKind.CONTEXT_NOT_ACCEPTED,
            "this agent does not accept client-chosen context ids",
            {"contextId": message.context_id},
        )
        return refused("context-not-accepted", error)
    limit = limits.tasks_per_tenant
    if limit is not None and tenant_task_count >= limit:
        return refused("task-limit", task_limit_error(limit))
    context_id = message.context_id or new_context_id
    bound = msgspec.structs.replace(message, task_id=new_task_id, context_id=context_id)
    created = Task(
        id=new_task_id,
        context_id=context_id,
        status=TaskStatus(state=TaskState.SUBMITTED, timestamp=timestamp(now_ms)),
        history=[bound],
        metadata=request.metadata if task_metadata is None else task_metadata,
        generation=1 if generations else UNSET,
    )
    event = Event(task_id=new_task_id, seq=1, kind="task", body=created, at_ms=now_ms)
    record = TaskRecord(task=created, tenant=tenant, seq=1, created_ms=now_ms, updated_ms=now_ms)
    published = [Published("a2a.tasks.TaskCreated", {"task_id": new_task_id})]
    if streaming:
        published.append(stream_published(StreamResponse(task=created)))
    return Outcome("task-created", events=[event], record=record, published=published)


def _generation_mismatch(request: SendMessageRequest, task: TaskRecord) -> A2AError | None:
    """TaskGenerationMismatchError when the request's ifGenerationMatch is not the task's
    generation (a task that counts none is at 0)."""
    configuration = request.configuration
    if configuration is UNSET or configuration.if_generation_match is UNSET:
        return None
    expected = configuration.if_generation_match
    current = task.task.generation if task.task.generation is not UNSET else 0
    if expected == current:
        return None
    return A2AError(
        ErrorKind.TASK_GENERATION_MISMATCH,
        f"task {task.id!r} is at generation {current}, not {expected}",
        {"taskId": task.id, "expectedGeneration": str(expected), "currentGeneration": str(current)},
    )


def task_limit_error(limit: int) -> A2AError:
    """The tenant holds ``limit`` tasks: the refusal of a creation, decided here or by the
    store when concurrent creations filled the tenant first."""
    return A2AError(
        ErrorKind.RESOURCE_EXHAUSTED,
        f"the tenant already holds {limit} tasks",
        {"limit": str(limit)},
    )


def config_limit_error(limit: int, task_id: str) -> A2AError:
    """The task holds ``limit`` push configs (decided here or by the store, as above)."""
    return A2AError(
        ErrorKind.RESOURCE_EXHAUSTED,
        f"task {task_id!r} already holds {limit} push-notification configs",
        {"limit": str(limit), "taskId": task_id},
    )


def direct_message(
    reply: Message, request: SendMessageRequest, new_context_id: str, *, streaming: bool = False
) -> Outcome:
    """The agent answers with a message and creates no task."""
    context_id = reply.context_id or request.message.context_id or new_context_id
    bound = msgspec.structs.replace(reply, context_id=context_id, task_id="")
    published = [stream_published(StreamResponse(message=bound))] if streaming else []
    return Outcome("direct-message", message=bound, published=published)


def stream_published(response: StreamResponse) -> Published:
    """SendStreamingMessage's ``message:stream`` event: one StreamResponse, as on the wire."""
    return Published.later("a2a.tasks.MessageStreamResponse", to_builtins, response)


# --- reads ---------------------------------------------------------------------------------


def get_task(record: TaskRecord | None, *, tenant: str, task_id: str) -> Outcome:
    refusal = _visible(record, tenant)
    if refusal is not None:
        return refused(refusal, task_not_found(task_id))
    return Outcome("found", record=record)


def subscribe(
    record: TaskRecord | None, *, tenant: str, task_id: str, streaming: bool = True
) -> Outcome:
    if not streaming:
        error = A2AError(ErrorKind.UNSUPPORTED_OPERATION, "this agent does not stream")
        return refused("streaming-not-supported", error)
    refusal = _visible(record, tenant)
    if refusal is not None or record is None:
        return refused(refusal or "not-found", task_not_found(task_id))
    if lifecycle.is_terminal(record.state):
        error = A2AError(
            ErrorKind.UNSUPPORTED_OPERATION,
            f"task {record.id!r} is {record.state.value}; there is nothing to subscribe to",
            {"taskId": record.id, "state": record.state.value},
        )
        return refused("task-terminal", error)
    return Outcome("subscribed", record=record)


# --- CancelTask ----------------------------------------------------------------------------


def cancel_task(
    record: TaskRecord | None,
    *,
    tenant: str,
    task_id: str,
    now_ms: int,
    cancelable_now: bool = True,
    status_message: Message | None = None,
    final_metadata: Callable[[Task], dict[str, Any] | None] | None = None,
) -> Outcome:
    """CancelTask. ``final_metadata(task)``, when given, is the task's metadata as the cancel
    leaves it (None: unchanged): a task snapshot logged before the CANCELED status, in the
    same append (the agent's record of what the cancel ends; a terminal task never changes
    again)."""
    refusal = _visible(record, tenant)
    if refusal is not None or record is None:
        return refused(refusal or "not-found", task_not_found(task_id))
    if not lifecycle.can_move("cancel", record.state):
        error = A2AError(
            ErrorKind.TASK_NOT_CANCELABLE,
            f"task {record.id!r} is {record.state.value} and cannot be canceled",
            {"taskId": record.id, "state": record.state.value},
        )
        return refused("not-cancelable", error)
    if not cancelable_now:
        error = A2AError(
            ErrorKind.TASK_NOT_CANCELABLE,
            f"the agent cannot cancel task {record.id!r} at its current stage",
            {"taskId": record.id},
        )
        return refused("not-cancelable-now", error)
    events: list[Event] = []
    metadata = final_metadata(record.task) if final_metadata is not None else None
    if metadata is not None:
        snapshot = msgspec.structs.replace(record.task, metadata=metadata)
        record, event = append(record, "task", snapshot, now_ms)
        events.append(event)
    outcome = move(record, "cancel", now_ms, status_message)
    return dataclasses.replace(outcome, name="canceled", events=events + outcome.events)


# --- push-notification configs -------------------------------------------------------------


def _push_not_supported() -> A2AError:
    return A2AError(ErrorKind.PUSH_NOT_SUPPORTED, "this agent does not support push notifications")


def create_push_config(
    record: TaskRecord | None,
    config: TaskPushNotificationConfig,
    *,
    tenant: str,
    existing: Sequence[PushConfigRecord],
    new_id: str,
    now_ms: int,
    limits: Limits,
    push_supported: bool = True,
) -> Outcome:
    """CreateTaskPushNotificationConfig: ``created`` when the request names the config id,
    ``assigned`` when the server generates it. Same id again replaces the config."""
    if not push_supported:
        return refused("push-not-supported", _push_not_supported())
    if _visible(record, tenant) is not None or record is None:
        return refused("task-not-found", task_not_found(config.task_id))
    config_id = config.id or new_id
    replacing = any(r.config.id == config_id for r in existing)
    limit = limits.push_configs_per_task
    if not replacing and limit is not None and len(existing) >= limit:
        return refused("config-limit", config_limit_error(limit, record.id))
    stored = msgspec.structs.replace(config, id=config_id, task_id=record.id, tenant=tenant)
    new = PushConfigRecord(config=stored, tenant=tenant, created_ms=now_ms)
    published = Published(
        "a2a.tasks.PushNotificationConfigCreated",
        {"row": f"{record.id}/{config_id}", "config_id": config_id, "task_id": record.id},
    )
    return Outcome(
        "created" if config.id else "assigned",
        record=record,
        config=new,
        configs=[stored],
        published=[published],
    )


def get_push_config(
    record: TaskRecord | None,
    config: PushConfigRecord | None,
    *,
    tenant: str,
    task_id: str,
    config_id: str,
    push_supported: bool = True,
) -> Outcome:
    if not push_supported:
        return refused("push-not-supported", _push_not_supported())
    if _visible(record, tenant) is not None:
        return refused("not-found", task_not_found(task_id))
    if config is None or config.config.id != config_id or config.tenant != tenant:
        error = A2AError(
            ErrorKind.TASK_NOT_FOUND,
            f"task {task_id!r} has no push-notification config {config_id!r}",
            {"taskId": task_id, "configId": config_id},
        )
        return refused("config-not-found", error)
    return Outcome("found", record=record, config=config, configs=[config.config])


def list_push_configs(
    record: TaskRecord | None,
    configs: Sequence[PushConfigRecord],
    *,
    tenant: str,
    task_id: str,
    push_supported: bool = True,
) -> Outcome:
    if not push_supported:
        return refused("push-not-supported", _push_not_supported())
    refusal = _visible(record, tenant)
    if refusal is not None:
        return refused(
            "task-not-found" if refusal == "not-found" else refusal, task_not_found(task_id)
        )
    return Outcome("listed", record=record, configs=[c.config for c in configs])


def delete_push_config(
    record: TaskRecord | None,
    *,
    tenant: str,
    task_id: str,
    config_id: str,
    push_supported: bool = True,
) -> Outcome:
    """Deleting twice has the same effect as deleting once (the second publishes again)."""
    if not push_supported:
        return refused("push-not-supported", _push_not_supported())
    if _visible(record, tenant) is not None:
        return refused("task-not-found", task_not_found(task_id))
    published = Published(
        "a2a.tasks.PushNotificationConfigDeleted", {"config_id": config_id, "task_id": task_id}
    )
    return Outcome("deleted", record=record, published=[published])


# --- GetExtendedAgentCard ------------------------------------------------------------------


def get_extended_card(*, declared: bool, configured: bool) -> Outcome:
    if not declared:
        error = A2AError(
            ErrorKind.UNSUPPORTED_OPERATION, "this agent does not declare an extended card"
        )
        return refused("not-supported", error)
    if not configured:
        error = A2AError(
            ErrorKind.EXTENDED_CARD_NOT_CONFIGURED, "the extended agent card is not configured"
        )
        return refused("not-configured", error)
    return Outcome("returned")
