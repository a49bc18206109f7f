"""``accord chat``: a conversation with an agent in the terminal (Textual).

The header shows ``state · sub_state`` and whose turn it is; the reply appears as it is
written (artifact chunks); ``/`` completes the commands the agent's card lists; a help
request addressed to you is highlighted (and rings the bell). Enter sends, Ctrl+D completes
the conversation, Ctrl+C cancels it after asking, Ctrl+Q leaves (the conversation goes on).

The task is followed with SubscribeToTask through accord's client, which resumes a broken
stream after the last event it saw (``Last-Event-ID``); a stream that cannot be resumed is
opened again, and what was already shown is not shown twice.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Label, Static

from accord.chat._attach import Attachments
from accord.chat._conversation import Conversation, Line
from accord.harness import COMMANDS_URI, EVENT_MEDIA_TYPE
from accord.wire import (
    UNSET,
    AgentCard,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskState,
    TaskStatusUpdateEvent,
)

if TYPE_CHECKING:
    from accord.client import Client

RETRY_S = 2.0  # between attempts to follow the task once the client gave up resuming


def card_commands(card: AgentCard | None) -> list[dict[str, str]]:
    """The commands the card lists (the harness's commands extension), as ``{name,
    description, argument_hint}``."""
    if card is None:
        return []
    for extension in card.capabilities.extensions:
        if extension.uri != COMMANDS_URI or extension.params is UNSET:
            continue
        found = extension.params.get("commands")
        if isinstance(found, list):
            return [
                {key: str(entry.get(key) or "") for key in ("name", "description", "argument_hint")}
                for entry in found
                if isinstance(entry, dict) and isinstance(entry.get("name"), str)
            ]
    return []


class LineView(Static):
    """One line of the conversation; ``line`` is what it shows (tests read it)."""

    def __init__(self, line: Line) -> None:
        super().__init__(classes=f"line {line.kind}")
        self.line = line
        self.refresh_line()

    def refresh_line(self) -> None:
        line = self.line
        who = f"{line.who}: " if line.who else ""
        # As plain text: what agents and participants write is never read as markup.
        self.update(Text(f"{who}{line.text}{'' if line.done else ' ▍'}"))
        self.set_class(line.for_me, "for-me")
        self.set_class(not line.done, "streaming")


class Confirm(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "yes"),
        Binding("n,escape", "answer(False)", "no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Label(self.question)
            with Horizontal():
                yield Button("Yes (y)", id="yes", variant="error")
                yield Button("No (n)", id="no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class ChatApp(App[None]):
    CSS = """
    #header { background: $primary; color: $text; padding: 0 1; height: 1; }
    #log { height: 1fr; padding: 0 1; }
    .line { margin: 0 0 1 0; }
    .reply { color: $text; }
    .message { color: $text-muted; }
    .notice { color: $warning; text-style: italic; }
    .help { border-left: thick $warning; padding-left: 1; }
    .for-me { background: $warning 30%; text-style: bold; }
    #hint { color: $text-muted; height: auto; padding: 0 1; }
    #confirm { width: 50; height: auto; border: thick $error; background: $surface; padding: 1 2; }
    Confirm { align: center middle; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+d", "complete", "Complete", priority=True),
        Binding("ctrl+c", "cancel_task", "Cancel", priority=True),
        Binding("ctrl+q", "quit", "Leave", priority=True),
    ]

    def __init__(
        self,
        connect: Callable[[], Awaitable[Client]],
        *,
        task_id: str = "",
        participant: str = "",
        url: str = "",
    ) -> None:
        super().__init__()
        self._connect = connect
        self.conversation = Conversation(me=participant, task_id=task_id)
        self.url = url
        self.client: Client | None = None
        self.commands: list[dict[str, str]] = []
        self.views: dict[str, LineView] = {}
        self._following = False
        self.attachments = Attachments()  # /attach PATH: files for the next message

    # --- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="header")
        yield VerticalScroll(id="log")
        yield Static(id="hint")
        yield Input(placeholder="a message; / for commands", id="input")

    async def on_mount(self) -> None:
        self.title = f"accord chat {self.url}"
        self._show_header()
        self.query_one("#input", Input).focus()
        self.start()

    def _show_header(self) -> None:
        who = f" — you are {self.conversation.me}" if self.conversation.me else ""
        task = f"task {self.conversation.task_id} · " if self.conversation.task_id else ""
        self.query_one("#header", Static).update(Text(f"{task}{self.conversation.header}{who}"))

    def show(self, lines: list[Line]) -> None:
        log = self.query_one("#log", VerticalScroll)
        for line in lines:
            view = self.views.get(line.key)
            if view is None:
                view = self.views[line.key] = LineView(line)
                log.mount(view)
                if line.for_me:
                    self.bell()
            else:
                view.refresh_line()
        if lines:
            log.scroll_end(animate=False)
        self._show_header()

    def note(self, text: str) -> None:
        self.show([self.conversation.notice(text)])

    # --- talking to the agent ----------------------------------------------------------------

    @work(exclusive=True, group="connect")
    async def start(self) -> None:
        try:
            self.client = await self._connect()
        except Exception as exc:
            self.note(f"cannot connect: {exc}")
            return
        self.commands = card_commands(self.client.card)
        names = [f"/{command['name']} " for command in self.commands] + ["/attach "]
        self.query_one("#input", Input).suggester = SuggestFromList(names, case_sensitive=False)
        if self.conversation.task_id:
            try:
                task = await self.client.get_task(self.conversation.task_id)
            except Exception as exc:
                self.note(f"cannot open task {self.conversation.task_id}: {exc}")
                return
            self.show(self.conversation.see_task(task))
            self.follow()

    @work(exclusive=True, group="follow")
    async def follow(self) -> None:
        """Follow the task until it ends: resumed by the client after a break, opened again
        (after RETRY_S) when the client gives up."""
        assert self.client is not None
        conversation = self.conversation
        while not conversation.ended:
            try:
                async for event in self.client.subscribe(conversation.task_id):
                    self.show(conversation.see(event))
                    status = event.status_update
                    if isinstance(status, TaskStatusUpdateEvent) and (
                        status.status.state is TaskState.WORKING
                    ):
                        await self._catch_up()  # other participants' messages began this turn
                if not conversation.ended:
                    continue
            except Exception as exc:
                if conversation.ended:
                    break
                self.note(f"connection lost ({exc}); reconnecting")
                await asyncio.sleep(RETRY_S)
                await self._catch_up()
        self._show_header()

    async def _catch_up(self) -> None:
        """Messages the stream does not carry (other participants'), from the task itself."""
        assert self.client is not None
        try:
            task = await self.client.get_task(self.conversation.task_id)
        except Exception:
            return  # the next attempt will tell
        self.show(self.conversation.see_task(task))

    async def _send(self, parts: list[Part], what: str) -> bool:
        if self.client is None:
            self.note("not connected yet")
            return False
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.USER,
            parts=parts,
            task_id=self.conversation.task_id,
        )
        try:
            answer = await self.client.send(message, return_immediately=True)
        except Exception as exc:
            self.note(f"{what} refused: {exc}")
            return False
        if isinstance(answer, Task):
            if not self.conversation.task_id:
                self.show(self.conversation.see_task(answer))
                self.follow()
        else:
            self.show(self.conversation.see(StreamResponse(message=answer)))
        return True

    @on(Input.Submitted, "#input")
    async def submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if self.conversation.ended:
            self.note("the conversation has ended")
            return
        event.input.value = ""
        self.query_one("#hint", Static).update("")
        attached = self.attachments.command(text)
        if attached is not None:
            self.note(attached)
            return
        # (shown when the server's copy, with its id, comes back with the task)
        files = self.attachments.take()
        if not await self._send([Part(text=text), *files], "the message"):
            self.attachments.parts[:0] = files  # (kept for the next try)

    @on(Input.Changed, "#input")
    def changed(self, event: Input.Changed) -> None:
        value = event.value
        hint = ""
        if value.startswith("/") and " " not in value:
            matching = [c for c in self.commands if c["name"].startswith(value[1:])]
            hint = "   ".join(
                f"/{c['name']} {c['argument_hint']}".strip() + f" — {c['description']}"
                for c in matching
            )
        self.query_one("#hint", Static).update(Text(hint))

    async def action_complete(self) -> None:
        if not self.conversation.task_id or self.conversation.ended:
            return
        control = Part(data={"kind": "control", "action": "complete"}, media_type=EVENT_MEDIA_TYPE)
        if await self._send([control], "completing"):
            self.note("completing the conversation")

    def action_cancel_task(self) -> None:
        if not self.conversation.task_id or self.conversation.ended:
            self.exit()
            return

        async def answered(yes: bool | None) -> None:
            if not yes or self.client is None:
                return
            try:
                await self.client.cancel(self.conversation.task_id)
            except Exception as exc:
                self.note(f"cancel refused: {exc}")

        self.push_screen(Confirm("Cancel this conversation for everyone?"), answered)
