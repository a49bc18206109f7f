"""``accord card|send|stream|tasks|push``: talk to any A2A agent from the command line.

Every command takes the agent's URL first (``http://host:port``; ``host:port`` and ``:port``
are short for ``http://host:port`` and ``http://localhost:port``), then: ``--binding`` to force
one, ``--token`` (a bearer token), ``--header NAME:VALUE`` (repeatable; also sent with the card
request), ``--extension URI`` (repeatable), ``--timeout`` seconds, and ``--json`` for
machine-readable output (ProtoJSON objects; streams print one object per line; errors print
``{"error": {...}}``).

Exit codes: 0 success; 1 the agent answered with an A2A error; 2 bad usage (an invalid URL
included); 3 the agent could not be reached, did not answer in time, or answered something
that is not A2A; 4 the task ended FAILED, REJECTED or CANCELED (send, stream and subscribe);
130 interrupted; 141 the output was closed early (``| head``).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AsyncExitStack, aclosing
from dataclasses import dataclass, field
from functools import wraps
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from accord.cli import _render as render
from accord.cli._contract_message import contract_options
from accord.cli._message_input import build_message
from accord.cli._output import console, exit_on_closed_pipe
from accord.harness import EVENT_MEDIA_TYPE, PARTICIPANT_HEADER
from accord.wire import (
    AgentCard,
    AuthenticationInfo,
    ListTasksResponse,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
    to_builtins,
)

EXIT_OK = 0
EXIT_AGENT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_TASK_UNSUCCESSFUL = 4
EXIT_INTERRUPTED = 130

_UNSUCCESSFUL = {TaskState.FAILED, TaskState.REJECTED, TaskState.CANCELED}
_STATE_NAMES = [
    s.name.lower().replace("_", "-") for s in TaskState if s is not TaskState.UNSPECIFIED
]

if TYPE_CHECKING:  # the client is imported when a client command runs, not for `accord serve`
    import httpx

    from accord.client import A2AClientError, Client, ClientError

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
    verbose: bool = False  # print every HTTP exchange to standard error (secrets masked)


@dataclass
class Progress:
    """What a command following a task has seen of it: for the message if it stops early,
    and for its exit code."""

    task_id: str = ""
    state: TaskState | None = None
    turn_ended: bool = False
    # The artifacts begun (not appended to) on this stream, in order: this turn's; and those
    # the first Task seen already had (a turn's artifacts are the others).
    begun: list[str] = field(default_factory=list)
    before: set[str] | None = None

    def see(self, event: StreamResponse) -> None:
        if isinstance(event.task, Task):
            self.task_id = self.task_id or event.task.id
            if self.before is None:
                self.before = {artifact.artifact_id for artifact in event.task.artifacts}
            self.state = render.state_of(event.task.status)
            # A Task event that says INPUT_REQUIRED may be the task as the new turn began,
            # before the agent read the message: only a final state ends the turn here.
            self.turn_ended = self.state.terminal
        elif isinstance(event.status_update, TaskStatusUpdateEvent):
            self.task_id = self.task_id or event.status_update.task_id
            self.state = render.state_of(event.status_update.status)
            self.turn_ended = self.state.terminal or self.state.interrupted
        elif isinstance(event.artifact_update, TaskArtifactUpdateEvent):
            update = event.artifact_update
            self.task_id = self.task_id or update.task_id
            artifact_id = update.artifact.artifact_id
            if not update.append and artifact_id not in self.begun:
                self.begun.append(artifact_id)

    @property
    def exit_code(self) -> int:
        return EXIT_TASK_UNSUCCESSFUL if self.state in _UNSUCCESSFUL else EXIT_OK


@dataclass(frozen=True)
class TimeLimit:
    """A bound on the whole command (``--max-time``, or ``--timeout`` for ``send``)."""

    seconds: float | None
    flag: str


NO_LIMIT = TimeLimit(None, "")


@dataclass
class Run:
    """One command's run: the settings, what it followed, how long it may take."""

    settings: Settings
    limit: TimeLimit = NO_LIMIT
    progress: Progress = field(default_factory=Progress)
    card: AgentCard | None = None  # the agent's, once connected
    printer: render.StreamPrinter | None = None  # the live output of stream and subscribe

    def end_line(self) -> None:
        """End a line of artifact text left open, so that a message after it (to standard
        error, on the same terminal) starts on a line of its own."""
        if self.printer is not None:
            self.printer.finish()
            sys.stdout.flush()


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
    @click.option(
        "--verbose",
        "-v",
        is_flag=True,
        help="Print each HTTP request and response to standard error (secrets masked).",
    )
    @click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="Seconds to wait for the agent: to connect, and for each answer. send: for the "
        "end of the turn. stream, tasks subscribe: for the next bytes (keep-alives count); "
        "a silent connection is resumed, see --max-time.",
    )
    @click.option("--header", "headers", multiple=True, metavar="NAME:VALUE", help="Extra header.")
    @click.option(
        "--extension", "extensions", multiple=True, metavar="URI", help="Activate an extension."
    )
    @click.option("--token", envvar="ACCORD_TOKEN", help="Bearer token (or $ACCORD_TOKEN).")
    @click.option(
        "--as",
        "participant",
        metavar="ID",
        help="Speak as this participant of a conversation (the X-Participant-Id header; "
        "for servers without authentication, docs/harness.md).",
    )
    @click.option(
        "--binding",
        type=click.Choice(["JSONRPC", "HTTP+JSON", "GRPC"], case_sensitive=False),
        help="Use this binding (default: the agent's first that accord supports).",
    )
    @wraps(command)
    def wrapper(
        binding: str | None,
        token: str | None,
        participant: str | None,
        headers: tuple[str, ...],
        extensions: tuple[str, ...],
        timeout: float | None,
        as_json: bool,
        verbose: bool,
        **kwargs: Any,
    ) -> Any:
        from accord.client import expand_shorthand

        extra = _parse_headers(headers)
        if participant:
            extra[PARTICIPANT_HEADER] = participant
        settings = Settings(
            url=expand_shorthand(kwargs.pop("url")),
            binding=binding.upper() if binding else None,
            token=token,
            headers=extra,
            extensions=extensions,
            timeout=timeout,
            as_json=as_json,
            verbose=verbose,
        )
        return command(settings, **kwargs)

    return wrapper  # type: ignore[return-value]


def _max_time_option(command: F) -> F:
    return click.option(
        "--max-time",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="Stop after this many seconds in all (the task goes on at the agent).",
    )(command)


async def _connect(settings: Settings, http: httpx.AsyncClient | None = None) -> Client:
    """A client of the agent at ``settings.url`` (over ``http``, which the caller closes)."""
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
        http_client=http,
    )


# --- failures ------------------------------------------------------------------------------------


def _fail(
    settings: Settings, exit_code: int, name: str, message: str, extra: dict[str, Any] | None = None
) -> NoReturn:
    if settings.as_json:
        click.echo(json.dumps({"error": {"name": name, "message": message, **(extra or {})}}))
    else:
        click.echo(f"accord: {message}", err=True)
    sys.exit(exit_code)


def _follow_hint(run: Run) -> str:
    """Where a task the command stopped following can be picked up again."""
    progress = run.progress
    seen = f" (last seen {render.short_state(progress.state)})" if progress.state else ""
    command = shlex.join(["accord", "tasks", "subscribe", run.settings.url, progress.task_id])
    return f"task {progress.task_id} goes on at the agent{seen}: follow it with: {command}"


def _stopped(run: Run, reason: str) -> tuple[str, dict[str, Any]]:
    """``reason``, and what to do about the task that was being followed, if any."""
    if not run.progress.task_id:
        return reason, {}
    return f"{reason}; {_follow_hint(run)}", {"taskId": run.progress.task_id}


def _credentials_hint(settings: Settings, card: AgentCard | None) -> str:
    """How to present credentials with these commands, after an authentication failure."""
    if settings.token or any(name.lower() == "authorization" for name in settings.headers):
        return "the credentials given were refused"
    ways = [view.how for view in render.scheme_views(card)] if card is not None else []
    ways = [how for how in ways if how]
    if not ways:
        ways = [render.TOKEN_FLAGS, "--header NAME:VALUE"]
    return "pass credentials with " + " or ".join(dict.fromkeys(ways))


def _agent_error(run: Run, exc: A2AClientError) -> NoReturn:
    from accord.wire import ErrorKind

    name = exc.kind.error_name if exc.kind is not None else "A2AError"
    message = f"{name}: {exc.message}"
    if exc.kind is ErrorKind.UNAUTHENTICATED:
        message += f" ({_credentials_hint(run.settings, run.card)})"
    _fail(run.settings, EXIT_AGENT_ERROR, name, message, {"reason": exc.reason, "code": exc.code})


def _transport_failure(exc: ClientError) -> str:
    """What went wrong, in the words of these commands' flags."""
    from accord.client import GrpcPortError

    if isinstance(exc, GrpcPortError):
        return (
            f"{exc.origin}: this is a gRPC port: use --binding grpc with the agent's HTTP URL "
            "(its card is served over HTTP, not gRPC)"
        )
    return str(exc)


def _time_limit_reason(run: Run) -> str:
    if run.limit.seconds is None:  # a timeout of some layer below, not the command's
        return "timed out"
    waited = f"{run.limit.seconds:g} s ({run.limit.flag})"
    return f"gave up after {waited}" if run.progress.task_id else f"no answer within {waited}"


def _run(run: Run, work: Callable[[Client], Awaitable[int]]) -> NoReturn:
    """Connect, run ``work``, close; turn failures into one line and an exit code."""
    from accord.client import A2AClientError, ClientError, InvalidURLError, check_agent_url

    settings = run.settings

    async def main() -> int:
        async with asyncio.timeout(run.limit.seconds), AsyncExitStack() as stack:
            http = None
            if settings.verbose:
                from accord.cli._verbose import verbose_http_client

                http = await stack.enter_async_context(verbose_http_client())
            client = await stack.enter_async_context(await _connect(settings, http))
            run.card = client.card
            if settings.verbose and client.binding == "GRPC":
                click.echo(f"* gRPC calls to {client.interface.url} are not shown", err=True)
            return await work(client)

    try:
        try:
            check_agent_url(settings.url)
            code = asyncio.run(main())
            sys.stdout.flush()  # here, where a closed pipe is still ours to handle
        except InvalidURLError as exc:
            _fail(settings, EXIT_USAGE, "InvalidURLError", str(exc))
        except TimeoutError:
            run.end_line()
            message, extra = _stopped(run, _time_limit_reason(run))
            _fail(settings, EXIT_UNREACHABLE, "RequestTimeoutError", message, extra)
        except A2AClientError as exc:
            run.end_line()
            _agent_error(run, exc)
        except ClientError as exc:
            run.end_line()
            message, extra = _stopped(run, _transport_failure(exc))
            _fail(settings, EXIT_UNREACHABLE, type(exc).__name__, message, extra)
        except KeyboardInterrupt:
            run.end_line()
            message, extra = _stopped(run, "interrupted")
            _fail(settings, EXIT_INTERRUPTED, "Interrupted", message, extra)
    except BrokenPipeError:
        exit_on_closed_pipe()
    sys.exit(code)


def _dump(value: Any) -> None:
    click.echo(json.dumps(to_builtins(value), ensure_ascii=False))


def _task_exit(task: Task) -> int:
    return EXIT_TASK_UNSUCCESSFUL if render.state_of(task.status) in _UNSUCCESSFUL else EXIT_OK


# --- card ------------------------------------------------------------------------------------


@click.command()
@click.argument("url")
@click.option("--extended", is_flag=True, help="Fetch the extended (authenticated) card.")
@click.option(
    "--verify",
    is_flag=True,
    help="Fail (exit 1) unless the card's signature holds (A2A card signing).",
)
@_client_options
def card(settings: Settings, extended: bool, verify: bool) -> None:
    """Show an agent's card: interfaces, capabilities, security schemes, skills, and whether
    its signature holds."""
    from accord.client import check_signature

    async def work(client: Client) -> int:
        shown = await client.get_extended_card() if extended else client.card
        check = check_signature(shown) if extended else client.card_check
        if settings.as_json:
            _dump(shown)
        else:
            render.print_card(console(), shown)
            console().print(f"signature: {check.summary}", markup=False)
        if verify and check.status != "valid":
            _fail(
                settings,
                EXIT_AGENT_ERROR,
                "CardSignatureError",
                f"the card's signature does not hold: {check.summary}",
            )
        return EXIT_OK

    _run(Run(settings), work)


# --- send / stream ---------------------------------------------------------------------------


def _message_options(command: F) -> F:
    """TEXT and the options that build the message of send and stream: the command gets it
    as ``message``."""

    @click.argument("text", required=False)
    @click.option("--task-id", "--task", "task_id", default="", help="Continue this task.")
    @click.option("--context-id", default="", help="Continue this context.")
    @click.option("--data", multiple=True, metavar="JSON", help="Add a data part. Repeatable.")
    @click.option(
        "--file",
        "files",
        multiple=True,
        metavar="PATH",
        help="Attach a file (its bytes; media type from its name). Repeatable.",
    )
    @click.option("--metadata", metavar="JSON", help="The message's metadata (a JSON object).")
    @wraps(command)
    def wrapper(
        text: str | None,
        task_id: str,
        context_id: str,
        data: tuple[str, ...],
        files: tuple[str, ...],
        metadata: str | None,
        **kwargs: Any,
    ) -> Any:
        message = build_message(
            text, data=data, files=files, metadata=metadata, context_id=context_id, task_id=task_id
        )
        return command(message=message, **kwargs)

    return wrapper  # type: ignore[return-value]


async def _follow(run: Run, events: AsyncGenerator[StreamResponse, None]) -> None:
    """Print a stream's events as they come (one JSON object per line with ``--json``)."""
    printer = None if run.settings.as_json else render.StreamPrinter(console())
    run.printer = printer
    async with aclosing(events):  # closed here, in this task, whatever stops the loop
        async for event in events:
            run.progress.see(event)
            if printer is None:
                _dump(event)
            else:
                printer.show(event)
            sys.stdout.flush()
    if printer is not None:
        printer.finish()


async def _wait_for_turn(run: Run, client: Client, message: Message) -> Task | Message:
    """Send ``message`` and wait for the end of the turn; the final Task or the answer.

    An agent that streams is followed (SendStreamingMessage), so that the task's id is known
    from the first event on: a command that stops early can say which task goes on. Else a
    blocking SendMessage."""
    if client.card.capabilities.streaming is not True:
        if message.task_id:  # what the task had before: the turn's artifacts are the others
            run.progress.before = await _artifact_ids(client, message.task_id)
        return await client.send(message)
    async with aclosing(client.stream(message)) as events:
        async for event in events:
            if isinstance(event.message, Message):
                return event.message
            run.progress.see(event)
            if run.progress.turn_ended:
                break
    if not run.progress.task_id:
        from accord.client import InvalidResponseError

        raise InvalidResponseError("the agent's stream ended without a task or a message")
    return await client.get_task(run.progress.task_id)


def _show_answer(settings: Settings, answer: Task | Message, turn: list[str] | None = None) -> int:
    """Print a turn's answer; the command's exit code.

    ``turn``: the artifacts this turn made, when the task had others before it (a
    conversation's later turn): only those are printed."""
    if settings.as_json:
        _dump({"task": answer} if isinstance(answer, Task) else {"message": answer})
    elif isinstance(answer, Task):
        render.print_task(console(), answer, artifact_ids=turn)
    else:
        render.print_message(console(), answer)
    return _task_exit(answer) if isinstance(answer, Task) else EXIT_OK


async def _artifact_ids(client: Client, task_id: str) -> set[str] | None:
    """The ids of the artifacts task ``task_id`` has now; None if it cannot be read (the send
    then says why, or prints the whole task)."""
    from accord.client import A2AClientError

    try:
        task = await client.get_task(task_id, history_length=0)
    except A2AClientError:
        return None
    return {artifact.artifact_id for artifact in task.artifacts}


def _this_turn(
    run: Run, client: Client, message: Message, answer: Task | Message
) -> list[str] | None:
    """The artifacts of the turn ``message`` began or joined, when it went to a task that
    existed (a conversation's later turn); None: every artifact of the task is this turn's.

    The turn was followed (a streaming agent): the artifacts begun on that stream, then any
    the final task has that the first Task of the stream had not. A message that joined a
    running turn missed the artifacts begun before it came: it shows those begun after (the
    answers to it). An agent that does not stream: those the task had not before the message
    was sent (GetTask then)."""
    before = run.progress.before
    if not message.task_id or (client.card.capabilities.streaming is not True and before is None):
        return None
    turn = list(run.progress.begun)
    if isinstance(answer, Task) and before is not None:
        turn += [
            artifact.artifact_id
            for artifact in answer.artifacts
            if artifact.artifact_id not in before and artifact.artifact_id not in turn
        ]
    return turn


@click.command()
@click.argument("url")
@_message_options
@click.option("--no-wait", is_flag=True, help="Return as soon as the task exists.")
@_client_options
@contract_options
def send(settings: Settings, message: Message, no_wait: bool) -> None:
    """Send a message and print the answer, once the turn ends.

    TEXT is the message's text; - reads it from standard input."""
    run = Run(settings, TimeLimit(settings.timeout, "--timeout"))

    async def work(client: Client) -> int:
        if no_wait:
            answer = await client.send(message, return_immediately=True)
        else:
            answer = await _wait_for_turn(run, client, message)
        return _show_answer(settings, answer, _this_turn(run, client, message, answer))

    _run(run, work)


@click.command()
@click.argument("url")
@_message_options
@_max_time_option
@_client_options
@contract_options
def stream(settings: Settings, message: Message, max_time: float | None) -> None:
    """Send a message and show the task's progress live.

    TEXT is the message's text; - reads it from standard input."""
    run = Run(settings, TimeLimit(max_time, "--max-time"))

    async def work(client: Client) -> int:
        await _follow(run, client.stream(message))
        return run.progress.exit_code

    _run(run, work)


@click.command()
@click.argument("url")
@click.argument("task_id")
@_client_options
def complete(settings: Settings, task_id: str) -> None:
    """Complete a conversation: send the harness's complete control to TASK_ID.

    The agent completes the task, or keeps it open and says why (an open sub-task); a
    watcher or a stranger is refused."""
    run = Run(settings, TimeLimit(settings.timeout, "--timeout"))
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.USER,
        parts=[Part(data={"kind": "control", "action": "complete"}, media_type=EVENT_MEDIA_TYPE)],
        task_id=task_id,
    )

    async def work(client: Client) -> int:
        answer = await _wait_for_turn(run, client, message)
        return _show_answer(settings, answer, _this_turn(run, client, message, answer))

    _run(run, work)


# --- tasks -----------------------------------------------------------------------------------


@click.group()
def tasks() -> None:
    """List, inspect, cancel and follow tasks."""


def _next_page_command(settings: Settings, token: str, filters: dict[str, str | None]) -> str:
    words = ["accord", "tasks", "list", settings.url]
    for flag, value in filters.items():
        if value:
            words += [flag, value]
    return shlex.join([*words, "--page-token", token])


@tasks.command("list")
@click.argument("url")
@click.option("--context-id", default="", help="Only tasks of this context.")
@click.option(
    "--status",
    type=click.Choice(_STATE_NAMES),
    help="Only tasks in this state.",
)
@click.option(
    "--page-size", type=click.IntRange(1, 100), help="Tasks per page (the agent's default: 50)."
)
@click.option("--page-token", default="", help="The page to show (from the previous page).")
@click.option("--all", "every_page", is_flag=True, help="Every page, not just one.")
@_client_options
def tasks_list(
    settings: Settings,
    context_id: str,
    status: str | None,
    page_size: int | None,
    page_token: str,
    every_page: bool,
) -> None:
    """List tasks, newest first: one page, and how to get the next."""
    state = TaskState["_".join(status.upper().split("-"))] if status else None

    async def work(client: Client) -> int:
        page = await client.list_tasks_page(
            context_id=context_id,
            status=state,
            page_size=page_size,
            page_token=page_token,
            history_length=0,
        )
        found = list(page.tasks)
        if every_page:
            seen = {page_token}
            while page.next_page_token and page.next_page_token not in seen:
                seen.add(page.next_page_token)
                page = await client.list_tasks_page(
                    context_id=context_id,
                    status=state,
                    page_size=page_size,
                    page_token=page.next_page_token,
                    history_length=0,
                )
                found.extend(page.tasks)
        next_token = "" if every_page else page.next_page_token
        if settings.as_json:
            _dump(
                ListTasksResponse(
                    tasks=found,
                    next_page_token=next_token,
                    page_size=len(found),
                    total_size=page.total_size,
                )
            )
            return EXIT_OK
        out = console()
        if not found:
            out.print("no tasks")
            return EXIT_OK
        render.print_tasks(out, found)
        total = f" of {page.total_size}" if page.total_size > len(found) else ""
        out.print(f"{len(found)}{total} task{'s' if len(found) != 1 else ''}", style="dim")
        if next_token:
            filters = {
                "--context-id": context_id,
                "--status": status,
                "--page-size": str(page_size) if page_size else None,
            }
            more = _next_page_command(settings, next_token, filters)
            out.print(f"next page: {more}", markup=False)
        return EXIT_OK

    _run(Run(settings), work)


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
            render.print_task(console(), task, history=True)
        return EXIT_OK

    _run(Run(settings), work)


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
            render.print_task(console(), task)
        return EXIT_OK

    _run(Run(settings), work)


@tasks.command("subscribe")
@click.argument("url")
@click.argument("task_id")
@_max_time_option
@_client_options
def tasks_subscribe(settings: Settings, task_id: str, max_time: float | None) -> None:
    """Follow a task's events live until it ends (a task that has ended: printed as it is)."""
    run = Run(settings, TimeLimit(max_time, "--max-time"))

    async def work(client: Client) -> int:
        from accord.client import A2AClientError
        from accord.wire import ErrorKind

        try:
            await _follow(run, client.subscribe(task_id))
        except A2AClientError as exc:
            # A2A refuses to subscribe to a task in a final state: then the task, as it ended.
            if exc.kind is not ErrorKind.UNSUPPORTED_OPERATION or run.progress.task_id:
                raise
            task = await client.get_task(task_id)
            if not render.state_of(task.status).terminal:
                raise
            if settings.as_json:
                _dump(StreamResponse(task=task))
            else:
                render.print_task(console(), task)
            return _task_exit(task)
        return run.progress.exit_code

    _run(run, work)


# --- push ------------------------------------------------------------------------------------


@click.group()
def push() -> None:
    """Manage a task's push-notification webhooks."""


def _show_config(settings: Settings, config: TaskPushNotificationConfig) -> None:
    if settings.as_json:
        _dump(config)
    else:
        render.print_configs(console(), [config])


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

    _run(Run(settings), work)


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
        elif not configs:
            console().print(f"no push configs for task {task_id}", markup=False)
        else:
            render.print_configs(console(), configs)
        return EXIT_OK

    _run(Run(settings), work)


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

    _run(Run(settings), work)


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

    _run(Run(settings), work)
