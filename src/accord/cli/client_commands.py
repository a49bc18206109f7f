"""``accord card|send|stream|tasks|push``: talk to any A2A agent from the command line.

Every command takes the agent's URL first, then: ``--binding`` to force one, ``--token`` (a
bearer token), ``--header NAME:VALUE`` (repeatable; also sent with the card request),
``--extension URI`` (repeatable), ``--timeout`` seconds, and ``--json`` for machine-readable
output (ProtoJSON objects; streams print one object per line; errors print
``{"error": {...}}``).

Exit codes: 0 success; 1 the agent answered with an A2A error; 2 bad usage; 3 the agent could
not be reached or answered something that is not A2A; 4 the task ended FAILED, REJECTED or
CANCELED; 130 interrupted.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from accord.wire import to_builtins
from accord.wire.model import (
    AgentCard,
    Artifact,
    AuthenticationInfo,
    Message,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

EXIT_OK = 0
EXIT_AGENT_ERROR = 1
EXIT_UNREACHABLE = 3
EXIT_TASK_UNSUCCESSFUL = 4
EXIT_INTERRUPTED = 130

_UNSUCCESSFUL = {TaskState.FAILED, TaskState.REJECTED, TaskState.CANCELED}
_STATE_NAMES = [
    s.name.lower().replace("_", "-") for s in TaskState if s is not TaskState.UNSPECIFIED
]

if TYPE_CHECKING:  # the client is imported when a client command runs, not for `accord serve`
    from accord.client import Client

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Settings:
    url: str
    binding: str | None
    token: str | None
    headers: dict[str, str]
    extensions: tuple[str, ...]
    timeout: float | None
    as_json: bool


def _console() -> Console:
    # Not a terminal (a pipe, a file): wide enough that ids are never cut.
    width = None if sys.stdout.isatty() else 500
    return Console(soft_wrap=True, highlight=False, width=width)


def _parse_headers(values: tuple[str, ...]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise click.BadParameter(f"expected NAME:VALUE, got {value!r}", param_hint="--header")
        headers[name.strip()] = content.strip()
    return headers


def _client_options(command: F) -> F:
    """The options every client command shares; they become a :class:`Settings`."""

    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output (ProtoJSON).")
    @click.option("--timeout", type=float, help="Seconds to wait for an answer (streams: idle).")
    @click.option("--header", "headers", multiple=True, metavar="NAME:VALUE", help="Extra header.")
    @click.option(
        "--extension", "extensions", multiple=True, metavar="URI", help="Activate an extension."
    )
    @click.option("--token", envvar="ACCORD_TOKEN", help="Bearer token (or $ACCORD_TOKEN).")
    @click.option(
        "--binding",
        type=click.Choice(["JSONRPC", "HTTP+JSON", "GRPC"], case_sensitive=False),
        help="Use this binding (default: the agent's first that accord supports).",
    )
    @wraps(command)
    def wrapper(
        binding: str | None,
        token: str | None,
        headers: tuple[str, ...],
        extensions: tuple[str, ...],
        timeout: float | None,
        as_json: bool,
        **kwargs: Any,
    ) -> Any:
        settings = Settings(
            url=kwargs.pop("url"),
            binding=binding.upper() if binding else None,
            token=token,
            headers=_parse_headers(headers),
            extensions=extensions,
            timeout=timeout,
            as_json=as_json,
        )
        return command(settings, **kwargs)

    return wrapper  # type: ignore[return-value]


async def _connect(settings: Settings) -> Client:
    from accord.client import BearerToken, Client, Timeouts

    timeouts = Timeouts()
    if settings.timeout is not None:
        timeouts = Timeouts(
            connect=settings.timeout, request=settings.timeout, stream_idle=settings.timeout
        )
    return await Client.connect(
        settings.url,
        binding=settings.binding,
        credentials=BearerToken(settings.token) if settings.token else None,
        headers=settings.headers,
        extensions=settings.extensions,
        timeouts=timeouts,
    )


def _fail(
    settings: Settings, exit_code: int, name: str, message: str, extra: dict[str, Any] | None = None
) -> NoReturn:
    if settings.as_json:
        click.echo(json.dumps({"error": {"name": name, "message": message, **(extra or {})}}))
    else:
        click.echo(f"accord: {name}: {message}", err=True)
    sys.exit(exit_code)


def _run(settings: Settings, work: Callable[[Client], Awaitable[int]]) -> None:
    """Connect, run ``work``, close; turn failures into one line and an exit code."""
    from accord.client import A2AClientError, ClientError

    async def main() -> int:
        async with await _connect(settings) as client:
            return await work(client)

    try:
        code = asyncio.run(main())
    except A2AClientError as exc:
        name = exc.kind.error_name if exc.kind is not None else "A2AError"
        _fail(
            settings, EXIT_AGENT_ERROR, name, exc.message, {"reason": exc.reason, "code": exc.code}
        )
    except ClientError as exc:
        _fail(settings, EXIT_UNREACHABLE, type(exc).__name__, str(exc))
    except KeyboardInterrupt:
        _fail(settings, EXIT_INTERRUPTED, "Interrupted", "interrupted")
    sys.exit(code)


def _dump(value: Any) -> None:
    click.echo(json.dumps(to_builtins(value), ensure_ascii=False))


def _state(status: TaskStatus) -> TaskState:
    return status.state if isinstance(status.state, TaskState) else TaskState.UNSPECIFIED


def _short_state(state: TaskState) -> str:
    return state.value.removeprefix("TASK_STATE_").lower().replace("_", "-")


def _task_exit(task: Task) -> int:
    return EXIT_TASK_UNSUCCESSFUL if _state(task.status) in _UNSUCCESSFUL else EXIT_OK


def _parts_text(parts: list[Part]) -> str:
    out: list[str] = []
    for part in parts:
        if isinstance(part.text, str):
            out.append(part.text)
        elif isinstance(part.url, str):
            out.append(f"<{part.url}>")
        elif isinstance(part.raw, bytes):
            out.append(f"<{len(part.raw)} bytes {part.media_type or ''}>".replace(" >", ">"))
        else:
            out.append(json.dumps(part.data, ensure_ascii=False))
    return "".join(out)


def _status_line(status: TaskStatus) -> str:
    line = _short_state(_state(status))
    if isinstance(status.message, Message):
        line += f": {escape(_parts_text(status.message.parts))}"
    return line


def _print_task(console: Console, task: Task) -> None:
    console.print(f"task {task.id} [bold]{_status_line(task.status)}[/bold]")
    if task.context_id:
        console.print(f"  context {task.context_id}", style="dim")
    for artifact in task.artifacts:
        _print_artifact(console, artifact)


def _artifact_label(artifact: Artifact) -> str:
    return f"  [cyan]{escape('[' + (artifact.name or artifact.artifact_id) + ']')}[/cyan] "


def _print_artifact(console: Console, artifact: Artifact) -> None:
    console.print(_artifact_label(artifact) + escape(_parts_text(artifact.parts)))


def _print_message(console: Console, message: Message) -> None:
    console.print(f"[bold]{message.role}[/bold]: {escape(_parts_text(message.parts))}")


# --- card ------------------------------------------------------------------------------------


def _print_card(console: Console, card: AgentCard) -> None:
    console.print(f"[bold]{escape(card.name)}[/bold] {escape(card.version)}")
    console.print(card.description, markup=False)
    table = Table("binding", "version", "url", "tenant", title="interfaces", title_justify="left")
    for interface in card.supported_interfaces:
        table.add_row(
            interface.protocol_binding,
            interface.protocol_version,
            interface.url,
            interface.tenant,
        )
    console.print(table)
    caps = card.capabilities
    flags = {
        "streaming": caps.streaming,
        "push notifications": caps.push_notifications,
        "extended card": caps.extended_agent_card,
    }
    console.print("capabilities: " + ", ".join(k for k, v in flags.items() if v is True))
    for extension in caps.extensions:
        required = " (required)" if extension.required else ""
        console.print(f"extension: {extension.uri}{required}", markup=False)
    for skill in card.skills:
        about = escape(f"{skill.name} - {skill.description}")
        console.print(f"skill [cyan]{escape(skill.id)}[/cyan]: {about}")


@click.command()
@click.argument("url")
@click.option("--extended", is_flag=True, help="Fetch the extended (authenticated) card.")
@_client_options
def card(settings: Settings, extended: bool) -> None:
    """Show an agent's card."""

    async def work(client: Client) -> int:
        shown = await client.get_extended_card() if extended else client.card
        if settings.as_json:
            _dump(shown)
        else:
            _print_card(_console(), shown)
        return EXIT_OK

    _run(settings, work)


# --- send / stream ---------------------------------------------------------------------------


def _message_options(command: F) -> F:
    command = click.option("--context-id", default="", help="Continue this context.")(command)
    command = click.option("--task-id", default="", help="Continue this task.")(command)
    return command


@click.command()
@click.argument("url")
@click.argument("text")
@_message_options
@click.option("--no-wait", is_flag=True, help="Return as soon as the task exists.")
@_client_options
def send(settings: Settings, text: str, context_id: str, task_id: str, no_wait: bool) -> None:
    """Send TEXT and print the answer (waits for the end of the turn)."""

    async def work(client: Client) -> int:
        answer = await client.send(
            text,
            context_id=context_id,
            task_id=task_id,
            return_immediately=True if no_wait else None,
        )
        if settings.as_json:
            _dump({"task": answer} if isinstance(answer, Task) else {"message": answer})
        elif isinstance(answer, Task):
            _print_task(_console(), answer)
        else:
            _print_message(_console(), answer)
        return _task_exit(answer) if isinstance(answer, Task) else EXIT_OK

    _run(settings, work)


class _StreamPrinter:
    """Renders events as they arrive: state changes on their own line, artifact text inline."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.open_artifact: str | None = None  # an artifact whose text line is still open
        self.final: TaskState | None = None

    def _close_line(self) -> None:
        if self.open_artifact is not None:
            self.console.print()
            self.open_artifact = None

    def show(self, event: StreamResponse) -> None:
        if isinstance(event.task, Task):
            self._close_line()
            self.final = _state(event.task.status)
            self.console.print(
                f"task {event.task.id} [bold]{_status_line(event.task.status)}[/bold]"
            )
            for artifact in event.task.artifacts:
                _print_artifact(self.console, artifact)
        elif isinstance(event.status_update, TaskStatusUpdateEvent):
            self._close_line()
            self.final = _state(event.status_update.status)
            self.console.print(f"[bold]→ {_status_line(event.status_update.status)}[/bold]")
        elif isinstance(event.artifact_update, TaskArtifactUpdateEvent):
            self._artifact(event.artifact_update)
        elif isinstance(event.message, Message):
            self._close_line()
            _print_message(self.console, event.message)

    def _artifact(self, update: TaskArtifactUpdateEvent) -> None:
        artifact = update.artifact
        if not (update.append and self.open_artifact == artifact.artifact_id):
            self._close_line()
            self.console.print(_artifact_label(artifact), end="")
            self.open_artifact = artifact.artifact_id
        self.console.print(_parts_text(artifact.parts), end="", markup=False)
        if update.last_chunk:
            self._close_line()

    def finish(self) -> int:
        self._close_line()
        return EXIT_TASK_UNSUCCESSFUL if self.final in _UNSUCCESSFUL else EXIT_OK


async def _follow(settings: Settings, events: Any) -> int:
    printer = _StreamPrinter(_console())
    async for event in events:
        if settings.as_json:
            _dump(event)
            if isinstance(event.task, Task):
                printer.final = _state(event.task.status)
            elif isinstance(event.status_update, TaskStatusUpdateEvent):
                printer.final = _state(event.status_update.status)
        else:
            printer.show(event)
        sys.stdout.flush()
    return printer.finish()


@click.command()
@click.argument("url")
@click.argument("text")
@_message_options
@_client_options
def stream(settings: Settings, text: str, context_id: str, task_id: str) -> None:
    """Send TEXT and show the task's progress live."""

    async def work(client: Client) -> int:
        return await _follow(settings, client.stream(text, context_id=context_id, task_id=task_id))

    _run(settings, work)


# --- tasks -----------------------------------------------------------------------------------


@click.group()
def tasks() -> None:
    """List, inspect, cancel and follow tasks."""


@tasks.command("list")
@click.argument("url")
@click.option("--context-id", default="", help="Only tasks of this context.")
@click.option(
    "--status",
    type=click.Choice(_STATE_NAMES),
    help="Only tasks in this state.",
)
@click.option("--page-size", type=click.IntRange(1, 100), help="Tasks per request.")
@click.option("--limit", type=click.IntRange(min=1), help="Stop after this many tasks.")
@_client_options
def tasks_list(
    settings: Settings,
    context_id: str,
    status: str | None,
    page_size: int | None,
    limit: int | None,
) -> None:
    """List tasks, newest first (every page)."""

    async def work(client: Client) -> int:
        found: list[Task] = []
        state = TaskState["_".join(status.upper().split("-"))] if status else None
        async for task in client.list_tasks(
            context_id=context_id, status=state, page_size=page_size, history_length=0
        ):
            found.append(task)
            if limit is not None and len(found) >= limit:
                break
        if settings.as_json:
            click.echo(json.dumps([to_builtins(t) for t in found], ensure_ascii=False))
            return EXIT_OK
        table = Table("task", "state", "context", "updated")
        for task in found:
            timestamp = task.status.timestamp if isinstance(task.status.timestamp, str) else ""
            table.add_row(task.id, _short_state(_state(task.status)), task.context_id, timestamp)
        console = _console()
        console.print(table)
        console.print(f"{len(found)} task{'s' if len(found) != 1 else ''}", style="dim")
        return EXIT_OK

    _run(settings, work)


@tasks.command("get")
@click.argument("url")
@click.argument("task_id")
@click.option("--history-length", type=click.IntRange(min=0), help="At most this many messages.")
@_client_options
def tasks_get(settings: Settings, task_id: str, history_length: int | None) -> None:
    """Show a task."""

    async def work(client: Client) -> int:
        task = await client.get_task(task_id, history_length=history_length)
        if settings.as_json:
            _dump(task)
        else:
            console = _console()
            _print_task(console, task)
            for message in task.history:
                text = escape(_parts_text(message.parts))
                console.print(f"  {message.role}: {text}", style="dim")
        return EXIT_OK

    _run(settings, work)


@tasks.command("cancel")
@click.argument("url")
@click.argument("task_id")
@_client_options
def tasks_cancel(settings: Settings, task_id: str) -> None:
    """Cancel a task."""

    async def work(client: Client) -> int:
        task = await client.cancel(task_id)
        if settings.as_json:
            _dump(task)
        else:
            _print_task(_console(), task)
        return EXIT_OK

    _run(settings, work)


@tasks.command("subscribe")
@click.argument("url")
@click.argument("task_id")
@_client_options
def tasks_subscribe(settings: Settings, task_id: str) -> None:
    """Follow a task's events live until it ends."""

    async def work(client: Client) -> int:
        return await _follow(settings, client.subscribe(task_id))

    _run(settings, work)


# --- push ------------------------------------------------------------------------------------


@click.group()
def push() -> None:
    """Manage a task's push-notification webhooks."""


def _show_config(settings: Settings, config: TaskPushNotificationConfig) -> None:
    if settings.as_json:
        _dump(config)
    else:
        _print_configs([config])


def _print_configs(configs: list[TaskPushNotificationConfig]) -> None:
    table = Table("id", "task", "url", "token", "auth")
    for config in configs:
        auth = config.authentication
        table.add_row(
            config.id,
            config.task_id,
            config.url,
            "set" if config.token else "",
            auth.scheme if isinstance(auth, AuthenticationInfo) else "",
        )
    _console().print(table)


@push.command("add")
@click.argument("url")
@click.argument("task_id")
@click.argument("webhook")
@click.option("--id", "config_id", default="", help="The config's id (default: the server's).")
@click.option("--webhook-token", default="", help="Token the agent sends with each notification.")
@click.option("--auth-scheme", default="", help="Authorization scheme for the webhook (Bearer).")
@click.option("--auth-credentials", default="", help="Credentials for that scheme.")
@_client_options
def push_add(
    settings: Settings,
    task_id: str,
    webhook: str,
    config_id: str,
    webhook_token: str,
    auth_scheme: str,
    auth_credentials: str,
) -> None:
    """Register WEBHOOK for TASK_ID's updates."""

    async def work(client: Client) -> int:
        auth = (
            AuthenticationInfo(scheme=auth_scheme, credentials=auth_credentials)
            if auth_scheme
            else None
        )
        config = await client.create_push_config(
            task_id, webhook, config_id=config_id, token=webhook_token, authentication=auth
        )
        _show_config(settings, config)
        return EXIT_OK

    _run(settings, work)


@push.command("list")
@click.argument("url")
@click.argument("task_id")
@_client_options
def push_list(settings: Settings, task_id: str) -> None:
    """List TASK_ID's webhooks."""

    async def work(client: Client) -> int:
        configs = await client.list_push_configs(task_id)
        if settings.as_json:
            click.echo(json.dumps([to_builtins(c) for c in configs], ensure_ascii=False))
        else:
            _print_configs(configs)
        return EXIT_OK

    _run(settings, work)


@push.command("get")
@click.argument("url")
@click.argument("task_id")
@click.argument("config_id")
@_client_options
def push_get(settings: Settings, task_id: str, config_id: str) -> None:
    """Show one of TASK_ID's webhooks."""

    async def work(client: Client) -> int:
        config = await client.get_push_config(task_id, config_id)
        _show_config(settings, config)
        return EXIT_OK

    _run(settings, work)


@push.command("delete")
@click.argument("url")
@click.argument("task_id")
@click.argument("config_id")
@_client_options
def push_delete(settings: Settings, task_id: str, config_id: str) -> None:
    """Remove one of TASK_ID's webhooks."""

    async def work(client: Client) -> int:
        await client.delete_push_config(task_id, config_id)
        if settings.as_json:
            click.echo(json.dumps({"taskId": task_id, "id": config_id, "deleted": True}))
        else:
            click.echo(f"deleted {config_id} of task {task_id}")
        return EXIT_OK

    _run(settings, work)


COMMANDS: list[click.Command] = [card, send, stream, tasks, push]


def register(group: click.Group) -> None:
    """Add the client commands to the ``accord`` command group."""
    for command in COMMANDS:
        group.add_command(command)
