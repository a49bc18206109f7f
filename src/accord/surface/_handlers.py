"""Each command of the surface: decode its Input, run it through the engine or the core, and
name the seed's outcome with what it published and answers.

A handler returns a :class:`Result`; refusals the input decides raise :class:`InputError`
(422); a refusal no outcome declares raises :class:`Unfinished` (501).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from accord.core import Caller, Outcome, Published, TaskRecord, status_published, views
from accord.core import agent as agent_commands
from accord.core import client as client_commands
from accord.engine import Claims
from accord.errors import AccordError
from accord.service import Call, Service, scoped
from accord.wire import (
    UNSET,
    A2AError,
    Artifact,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    ErrorKind,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
    WireError,
    decode,
    to_builtins,
    too_deep_field,
)


@dataclass(slots=True)
class Result:
    outcome: str
    published: list[Published] = field(default_factory=list)
    response: Any = None
    payload: dict[str, Any] | None = None


class InputError(AccordError):
    def __init__(self, message: str, errors: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []


class Unfinished(AccordError):
    def __init__(self, message: str, committed: bool = False) -> None:
        super().__init__(message)
        self.committed = committed


@dataclass(slots=True)
class Context:
    service: Service
    claims: Claims | None
    call: Call
    body: bytes

    @property
    def caller(self) -> Caller:
        return self.call.caller


Handler = Callable[[Context], Awaitable[Result]]

# --- inputs --------------------------------------------------------------------------------


class MoveInput(msgspec.Struct, forbid_unknown_fields=True):
    """StartWorking / CompleteTask / FailTask / RejectTask / RequireInput / RequireAuth."""

    id: str
    status_message: Message | msgspec.UnsetType = UNSET


class ArtifactInput(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    artifact: Artifact
    append: bool
    last_chunk: bool


_PATH = re.compile(r"at `\$(.*)`$")


def _struct(body: bytes, type_: type[Any]) -> Any:
    try:
        return msgspec.json.decode(body or b"{}", type=type_)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = _PATH.search(text)
        path = match.group(1).lstrip(".") if match else ""
        raise InputError(text, [{"field": path, "message": _PATH.sub("", text).strip()}]) from None
    except msgspec.DecodeError as exc:
        raise InputError(f"the body is not JSON: {exc}") from None
    except RecursionError:
        raise _too_deep(body) from None


def _wire(body: bytes, type_: type[Any]) -> Any:
    try:
        value = decode(body or b"{}", type_)
    except WireError as exc:
        raise InputError(str(exc), [{"field": exc.field, "message": exc.description}]) from None
    except RecursionError:
        raise _too_deep(body) from None
    if not isinstance(value, type_):
        raise InputError("the body must be a JSON object")
    return value


def _too_deep(body: bytes) -> InputError:
    """JSON nested past the parser's limit (RecursionError), named by where it is."""
    field = too_deep_field(body)
    message = "nested too deeply to be read"
    return InputError(f"{field or 'the body'} is {message}", [{"field": field, "message": message}])


def _invalid(error: A2AError) -> InputError:
    errors = [{"field": v.field, "message": v.description} for v in error.violations]
    return InputError(error.message, errors)


# --- agent commands ------------------------------------------------------------------------


def _move_handler(move_name: str) -> Handler:
    async def handle(ctx: Context) -> Result:
        data: MoveInput = _struct(ctx.body, MoveInput)
        status = data.status_message if data.status_message is not UNSET else None
        if status is not None:
            try:
                ctx.service.bounds.check_message(status, "status_message")
            except A2AError as error:
                raise _invalid(error) from None

        def decide(record: TaskRecord | None, now: int) -> Outcome:
            return agent_commands.move(record, move_name, now, status, data.id)

        outcome = await ctx.service.engine.agent_command(data.id, ctx.caller.tenant, decide)
        return await _agent_result(ctx, outcome)

    return handle


async def update_artifact(ctx: Context) -> Result:
    data: ArtifactInput = _struct(ctx.body, ArtifactInput)
    try:
        ctx.service.bounds.check_artifact(data.artifact)
    except A2AError as error:
        raise _invalid(error) from None

    def decide(record: TaskRecord | None, now: int) -> Outcome:
        return agent_commands.update_artifact(
            record,
            data.artifact,
            now,
            append_parts=data.append,
            last_chunk=data.last_chunk,
            task_id=data.id,
        )

    outcome = await ctx.service.engine.agent_command(data.id, ctx.caller.tenant, decide)
    if outcome.name == "wrong-state":
        # The seed declares no refusal for a terminal task here; nothing was written.
        raise Unfinished(outcome.error.message if outcome.error else "the task is terminal")
    return await _agent_result(ctx, outcome)


async def _agent_result(ctx: Context, outcome: Outcome) -> Result:
    if outcome.ok and outcome.record is not None and ctx.claims is not None:
        record = outcome.record
        await ctx.claims.touched(record.id, record.state, record.updated_ms)
    return Result(outcome.name, outcome.published if outcome.ok else [], payload=outcome.payload)


# --- client commands -----------------------------------------------------------------------

_SEND_ERRORS = {
    ErrorKind.TASK_NOT_FOUND: "task-not-found",
    ErrorKind.UNSUPPORTED_OPERATION: "task-terminal",
    ErrorKind.CONTEXT_MISMATCH: "context-mismatch",
    ErrorKind.CONTEXT_NOT_ACCEPTED: "context-not-accepted",
    ErrorKind.CONTENT_TYPE_NOT_SUPPORTED: "content-type-not-supported",
}


def _send_refusal(error: A2AError, request: SendMessageRequest) -> Result:
    if error.kind is ErrorKind.RESOURCE_EXHAUSTED:
        return Result("history-limit" if request.message.task_id else "task-limit")
    if error.kind is ErrorKind.UNSUPPORTED_OPERATION and "state" not in error.metadata:
        # (not the terminal task's refusal, which names its state: an agent's own refusal —
        # the harness's rules — for which the seed declares no outcome)
        raise error
    name = _SEND_ERRORS.get(error.kind)
    if name is None:
        raise error
    return Result(name)


def _created(task: Task) -> Published:
    return Published("a2a.tasks.TaskCreated", {"task_id": task.id})


async def send_message(ctx: Context) -> Result:
    request: SendMessageRequest = _wire(ctx.body, SendMessageRequest)
    try:
        ctx.service.bounds.check_message(request.message)
        result = await ctx.service.engine.send_message(
            request, scoped(ctx.call, request.tenant), ctx.call.extensions
        )
    except A2AError as error:
        return _send_refusal(error, request)
    if isinstance(result, Message):
        return Result("direct-message", response={"message": result})
    if request.message.task_id:
        return Result("continued", response={"task": result})
    return Result("task-created", [_created(result)], response={"task": result})


async def send_streaming_message(ctx: Context) -> Result:
    request: SendMessageRequest = _wire(ctx.body, SendMessageRequest)
    if not ctx.service.streaming:
        return Result("streaming-not-supported")
    try:
        ctx.service.bounds.check_message(request.message)
        stream = await ctx.service.engine.send_streaming_message(
            request, scoped(ctx.call, request.tenant), ctx.call.extensions
        )
    except A2AError as error:
        return _send_refusal(error, request)
    try:
        first = None
        async for item in stream:
            if item is not None:
                first = item
                break
    except A2AError as error:  # the creation failed in the store (e.g. over the task limit)
        return _send_refusal(error, request)
    finally:
        with contextlib.suppress(Exception):
            await stream.aclose()  # type: ignore[attr-defined]
    if first is None:
        raise Unfinished("the stream ended before its first element", committed=True)
    element = Published("a2a.tasks.MessageStreamResponse", to_builtins(first.response))
    if first.response.message is not UNSET:
        return Result("direct-message", [element], response={"message": first.response.message})
    task = first.response.task
    assert isinstance(task, Task)
    if request.message.task_id:
        return Result("continued", [element], response={"task": task})
    return Result("task-created", [_created(task), element], response={"task": task})


async def get_task(ctx: Context) -> Result:
    request: GetTaskRequest = _wire(ctx.body, GetTaskRequest)
    try:
        history = views.history_length(request.history_length)
    except A2AError as error:
        raise _invalid(error) from None
    try:
        task = await ctx.service.engine.get_task(
            request.id, scoped(ctx.call, request.tenant), history
        )
    except A2AError as error:
        if error.kind is ErrorKind.TASK_NOT_FOUND:
            return Result("not-found")
        raise
    return Result("found", response={"task": task})


async def cancel_task(ctx: Context) -> Result:
    request: CancelTaskRequest = _wire(ctx.body, CancelTaskRequest)
    try:
        task = await ctx.service.engine.cancel_task(request.id, scoped(ctx.call, request.tenant))
    except A2AError as error:
        if error.kind is ErrorKind.TASK_NOT_FOUND:
            return Result("not-found")
        if error.kind is ErrorKind.TASK_NOT_CANCELABLE:
            return Result("not-cancelable")
        raise
    update = TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)
    return Result("canceled", [status_published(update)], response={"task": task})


async def subscribe(ctx: Context) -> Result:
    request: SubscribeToTaskRequest = _wire(ctx.body, SubscribeToTaskRequest)
    caller = scoped(ctx.call, request.tenant)
    record = await ctx.service.engine.store.get_task(request.id, caller.tenant)
    outcome = client_commands.subscribe(
        record, tenant=caller.tenant, task_id=request.id, streaming=ctx.service.streaming
    )
    if not outcome.ok or record is None:
        return Result(outcome.name)
    return Result("subscribed", response={"task": record.task})


def _push_guard(ctx: Context) -> Result | None:
    return None if ctx.service.push_notifications else Result("push-not-supported")


async def create_push_config(ctx: Context) -> Result:
    request: TaskPushNotificationConfig = _wire(ctx.body, TaskPushNotificationConfig)
    if (refusal := _push_guard(ctx)) is not None:
        return refusal
    try:
        config = await ctx.service.engine.create_push_config(
            request, scoped(ctx.call, request.tenant)
        )
    except A2AError as error:
        if error.kind is ErrorKind.TASK_NOT_FOUND:
            return Result("task-not-found")
        if error.kind is ErrorKind.RESOURCE_EXHAUSTED:
            return Result("config-limit")
        if error.kind in (ErrorKind.INVALID_PARAMS, ErrorKind.INVALID_REQUEST):
            raise _invalid(error) from None
        raise
    published = Published(
        "a2a.tasks.PushNotificationConfigCreated",
        {"row": f"{config.task_id}/{config.id}", "config_id": config.id, "task_id": config.task_id},
    )
    outcome = "created" if request.id else "assigned"
    return Result(outcome, [published], response={"config": config})


async def _task_visible(ctx: Context, task_id: str, tenant: str) -> bool:
    caller = scoped(ctx.call, tenant)
    return await ctx.service.engine.store.get_task(task_id, caller.tenant) is not None


async def get_push_config(ctx: Context) -> Result:
    request: GetTaskPushNotificationConfigRequest = _wire(
        ctx.body, GetTaskPushNotificationConfigRequest
    )
    if (refusal := _push_guard(ctx)) is not None:
        return refusal
    if not await _task_visible(ctx, request.task_id, request.tenant):
        return Result("not-found")
    try:
        config = await ctx.service.engine.get_push_config(
            request.task_id, request.id, scoped(ctx.call, request.tenant)
        )
    except A2AError as error:
        if error.kind is ErrorKind.TASK_NOT_FOUND:
            return Result("config-not-found")
        raise
    return Result("found", response={"config": config})


async def list_push_configs(ctx: Context) -> Result:
    request: ListTaskPushNotificationConfigsRequest = _wire(
        ctx.body, ListTaskPushNotificationConfigsRequest
    )
    if (refusal := _push_guard(ctx)) is not None:
        return refusal
    try:
        configs = await ctx.service.engine.list_push_configs(
            request.task_id, scoped(ctx.call, request.tenant)
        )
    except A2AError as error:
        if error.kind is ErrorKind.TASK_NOT_FOUND:
            return Result("task-not-found")
        raise
    return Result("listed", response={"configs": configs})


async def delete_push_config(ctx: Context) -> Result:
    request: DeleteTaskPushNotificationConfigRequest = _wire(
        ctx.body, DeleteTaskPushNotificationConfigRequest
    )
    if (refusal := _push_guard(ctx)) is not None:
        return refusal
    try:
        await ctx.service.engine.delete_push_config(
            request.task_id, request.id, scoped(ctx.call, request.tenant)
        )
    except A2AError as error:
        if error.kind is ErrorKind.TASK_NOT_FOUND:
            return Result("task-not-found")
        raise
    published = Published(
        "a2a.tasks.PushNotificationConfigDeleted",
        {"config_id": request.id, "task_id": request.task_id},
    )
    return Result("deleted", [published])


async def get_extended_card(ctx: Context) -> Result:
    _wire(ctx.body, GetExtendedAgentCardRequest)
    service = ctx.service
    outcome = client_commands.get_extended_card(
        declared=service.card.capabilities.extended_agent_card is True,
        configured=service.extended_card is not None,
    )
    if not outcome.ok:
        return Result(outcome.name)
    card = to_builtins(service.extended_card)
    # ProtoJSON leaves an empty StringList out; the seed's StringList requires ``list``.
    for requirement in card.get("securityRequirements", []):
        for scopes in requirement.get("schemes", {}).values():
            scopes.setdefault("list", [])
    return Result("returned", response={"card": card})


HANDLERS: dict[str, Handler] = {
    "a2a.discovery.GetExtendedAgentCard": get_extended_card,
    "a2a.tasks.SendMessage": send_message,
    "a2a.tasks.SendStreamingMessage": send_streaming_message,
    "a2a.tasks.GetTask": get_task,
    "a2a.tasks.CancelTask": cancel_task,
    "a2a.tasks.SubscribeToTask": subscribe,
    "a2a.tasks.CreateTaskPushNotificationConfig": create_push_config,
    "a2a.tasks.GetTaskPushNotificationConfig": get_push_config,
    "a2a.tasks.ListTaskPushNotificationConfigs": list_push_configs,
    "a2a.tasks.DeleteTaskPushNotificationConfig": delete_push_config,
    "a2a.tasks.StartWorking": _move_handler("work"),
    "a2a.tasks.CompleteTask": _move_handler("complete"),
    "a2a.tasks.FailTask": _move_handler("fail"),
    "a2a.tasks.RejectTask": _move_handler("reject"),
    "a2a.tasks.RequireInput": _move_handler("require_input"),
    "a2a.tasks.RequireAuth": _move_handler("require_auth"),
    "a2a.tasks.UpdateArtifact": update_artifact,
}

# Commands of the A2A client side: they pass version and extension negotiation first.
NEGOTIATED = frozenset(
    name
    for name in HANDLERS
    if name.startswith("a2a.discovery.")
    or name
    in {
        "a2a.tasks.SendMessage",
        "a2a.tasks.SendStreamingMessage",
        "a2a.tasks.GetTask",
        "a2a.tasks.CancelTask",
        "a2a.tasks.SubscribeToTask",
        "a2a.tasks.CreateTaskPushNotificationConfig",
        "a2a.tasks.GetTaskPushNotificationConfig",
        "a2a.tasks.ListTaskPushNotificationConfigs",
        "a2a.tasks.DeleteTaskPushNotificationConfig",
    }
)
