"""``accord participants list|add|remove URL TASK_ID …``: a conversation's participants.

``list`` reads them from the task (the harness's task extension); ``add`` and ``remove``
send the harness's admin envelope — ``{"kind": "task", "payload": {"participants": […]}}``,
the whole list as it should be — on the task, as the admin ``--as`` names (or the
credentials say), and print the list once the change's turn has ended. Anyone but an admin
is refused by the server (``UnsupportedOperation``, exit 1); see docs/harness.md.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table
from rich.text import Text

from accord.cli._client_commands import (
    EXIT_AGENT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    Run,
    Settings,
    TimeLimit,
    _client_options,
    _dump,
    _fail,
    _run,
    _task_exit,
    _wait_for_turn,
)
from accord.cli._output import console, id_column, print_table
from accord.harness import (
    EVENT_MEDIA_TYPE,
    PARTICIPANT_KINDS,
    PARTICIPANT_ROLES,
    participants_envelope,
    participants_of,
    with_participant,
    without_participant,
)
from accord.wire import Message, Part, Role, Task

if TYPE_CHECKING:
    from accord.client import Client


def _roles(people: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(str(p.get("id")), str(p.get("role")), str(p.get("kind"))) for p in people}


def _print(settings: Settings, task: Task, people: list[dict[str, Any]]) -> None:
    if settings.as_json:
        _dump({"taskId": task.id, "participants": people})
        return
    table = Table(id_column("participant"), "role", "kind", "name")
    for person in people:
        table.add_row(
            Text(str(person.get("id", ""))),
            str(person.get("role", "")),
            str(person.get("kind", "")),
            Text(str(person.get("display_name") or "")),
        )
    print_table(console(), table)


async def _current(run: Run, client: Client, task_id: str) -> tuple[Task, list[dict[str, Any]]]:
    task = await client.get_task(task_id, history_length=0)
    people = participants_of(task.metadata)
    if people is None:
        _fail(
            run.settings,
            EXIT_USAGE,
            "NotAConversation",
            f"task {task_id} has no participants (it is not a conversation of the harness)",
        )
    return task, people


@click.group()
def participants() -> None:
    """A conversation's participants: list them; add, change or remove one (an admin)."""


@participants.command("list")
@click.argument("url")
@click.argument("task_id")
@_client_options
def list_(settings: Settings, task_id: str) -> None:
    """The participants of TASK_ID: id, role, kind and display name."""
    run = Run(settings, TimeLimit(settings.timeout, "--timeout"))

    async def work(client: Client) -> int:
        task, people = await _current(run, client, task_id)
        _print(settings, task, people)
        return EXIT_OK

    _run(run, work)


def _change(run: Run, task_id: str, change: Any) -> None:
    """Send the admin envelope with the list ``change`` makes of the current one; print the
    participants once the turn the change starts has ended."""

    async def work(client: Client) -> int:
        _, people = await _current(run, client, task_id)
        wanted = change(people)
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.USER,
            parts=[Part(data=participants_envelope(wanted), media_type=EVENT_MEDIA_TYPE)],
            task_id=task_id,
        )
        answer = await _wait_for_turn(run, client, message)
        task = answer if isinstance(answer, Task) else await client.get_task(task_id)
        now = participants_of(task.metadata) or []
        if _roles(now) != _roles(wanted):
            # A hook judged the change (refused or replaced it): the task says why.
            from accord.cli._render import parts_text

            said = task.status.message
            why = parts_text(said.parts) if isinstance(said, Message) else "the change was not made"
            _print(run.settings, task, now)
            _fail(run.settings, EXIT_AGENT_ERROR, "ChangeNotMade", f"not changed as asked: {why}")
        _print(run.settings, task, now)
        return _task_exit(task)

    _run(run, work)


@participants.command()
@click.argument("url")
@click.argument("task_id")
@click.argument("participant_id", metavar="ID")
@click.option(
    "--role",
    type=click.Choice(PARTICIPANT_ROLES),
    help="The participant's role (default: watcher; an existing participant's is changed).",
)
@click.option("--kind", type=click.Choice(PARTICIPANT_KINDS), help="human (default) or agent.")
@click.option("--name", "display_name", help="A display name.")
@_client_options
def add(
    settings: Settings,
    task_id: str,
    participant_id: str,
    role: str | None,
    kind: str | None,
    display_name: str | None,
) -> None:
    """Add ID to the conversation TASK_ID, or change their role (as an admin: --as ADMIN).

    Prints the participants once the change's turn has ended."""

    def change(people: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return with_participant(
            people, participant_id, role=role, kind=kind, display_name=display_name
        )

    _change(Run(settings, TimeLimit(settings.timeout, "--timeout")), task_id, change)


@participants.command()
@click.argument("url")
@click.argument("task_id")
@click.argument("participant_id", metavar="ID")
@_client_options
def remove(settings: Settings, task_id: str, participant_id: str) -> None:
    """Remove ID from the conversation TASK_ID (as an admin: --as ADMIN); they leave its
    channels too. Prints the participants once the change's turn has ended."""
    run = Run(settings, TimeLimit(settings.timeout, "--timeout"))

    def change(people: list[dict[str, Any]]) -> list[dict[str, Any]]:
        try:
            return without_participant(people, participant_id)
        except KeyError:
            _fail(
                settings,
                EXIT_USAGE,
                "NotAParticipant",
                f"{participant_id} is not a participant of task {task_id}",
            )

    _change(run, task_id, change)
