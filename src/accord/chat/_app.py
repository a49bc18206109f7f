"""``accord chat``: a conversation with an agent in the terminal (Textual).

The header shows ``state · sub_state`` and whose turn it is; what you send shows at once;
the reply appears as it is written (artifact chunks), under the agent's name, and a reply
cut before its turn ended is marked interrupted; ``/`` completes the commands the agent's
card lists and the chat's own (``/new``, ``/invite ID [ROLE]``); a help request addressed to
you is highlighted (and rings the bell), its options numbered: a number answers with that
option. Each turn's work (its tool calls, its tokens) is one collapsed line under the
message that started it: a click, Enter on it or Ctrl+O (the newest) expands it.
Enter sends, Ctrl+D completes the conversation, Ctrl+N starts a new one, Ctrl+C
cancels it after asking, Ctrl+Q leaves (the conversation goes on). Against an agent whose
tasks are not conversations (each ends with its answer), each message starts a new task.

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
from textual.events import Click
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Label, Static

from accord.chat import _a2ui as a2ui
from accord.chat._attach import Attachments
from accord.chat._conversation import Conversation, Line
from accord.harness import (
    COMMANDS_URI,
    EVENT_MEDIA_TYPE,
    PARTICIPANT_ROLES,
    participants_envelope,
    participants_of,
    with_participant,
)
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
# The chat's own commands (never sent as text), listed with the card's.
CHAT_COMMANDS = [
    {"name": "new", "description": "Start a new conversation", "argument_hint": ""},
    {
        "name": "invite",
        "description": "Add a participant (an admin): role assignee, reporter, watcher or admin",
        "argument_hint": "ID [ROLE]",
    },
]


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


def pick_hint(request: Line) -> str:
    return f"type a number (1 to {len(request.options)}) to answer with that option"


class LineView(Static):
    """One line of the conversation; ``line`` is what it shows (tests read it)."""

    def __init__(self, line: Line) -> None:
        super().__init__(classes=f"line {line.kind}")
        self.line = line
        self.refresh_line()

    def refresh_line(self) -> None:
        line = self.line
        who = f"{line.who}: " if line.who else ""
        end = " ▍" if not line.done else " ⋯ [interrupted]" if line.interrupted else ""
        # As plain text: what agents and participants write is never read as markup.
        self.update(Text(f"{who}{line.text}{end}"))
        self.set_class(line.for_me, "for-me")
        self.set_class(not line.done, "streaming")
        self.set_class(line.interrupted, "interrupted")


class WorkView(Vertical):
    """A turn's work (``line.work``): its summary, and the details it expands to — by a
    click, Enter when focused, or the app's Ctrl+O."""

    can_focus = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,space", "toggle_details", "Expand", show=False),
    ]

    def __init__(self, line: Line) -> None:
        super().__init__(classes="line work")
        self.line = line
        self.expanded = False
        self.summary = Static(classes="work-summary")
        self.details = Static(classes="work-details")
        self.details.display = False
        self.refresh_line()

    def compose(self) -> ComposeResult:
        yield self.summary
        yield self.details

    def refresh_line(self) -> None:
        work = self.line.work
        if work is None:
            return
        # (as plain text: tool arguments and results are never read as markup)
        self.summary.update(Text(work.summary(self.expanded)))
        if self.expanded:
            self.details.update(Text(work.details()))

    def action_toggle_details(self) -> None:
        self.expanded = not self.expanded
        self.details.display = self.expanded
        self.refresh_line()

    def on_click(self, event: Click) -> None:
        event.stop()
        self.action_toggle_details()


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
    .interrupted { color: $text-muted; }
    .help { border-left: thick $warning; padding-left: 1; }
    .for-me { background: $warning 30%; text-style: bold; }
    .work { height: auto; color: $text-muted; }
    .work:focus { background: $boost; }
    .work-details { padding-left: 2; }
    #hint { color: $text-muted; height: auto; padding: 0 1; }
    #confirm { width: 50; height: auto; border: thick $error; background: $surface; padding: 1 2; }
    Confirm { align: center middle; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+d", "complete", "Complete", priority=True),
        Binding("ctrl+c", "cancel_task", "Cancel", priority=True),
        Binding("ctrl+n", "new_conversation", "New", priority=True),
        Binding("ctrl+o", "toggle_work", "Work", priority=True),
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
        self.views: dict[str, LineView | WorkView] = {}
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
        if not self._drawn():
            return
        who = f" — you are {self.conversation.me}" if self.conversation.me else ""
        task = f"task {self.conversation.task_id} · " if self.conversation.task_id else ""
        self.query_one("#header", Static).update(Text(f"{task}{self.conversation.header}{who}"))

    def _drawn(self) -> bool:
        """Whether the screen is still there (a follower may hear of the task as the app
        closes)."""
        return bool(self.screen_stack) and bool(self.query("#log"))

    def show(self, lines: list[Line]) -> None:
        if not self._drawn():
            return
        log = self.query_one("#log", VerticalScroll)
        for line in lines:
            view = self.views.get(line.key)
            if view is None:
                view = self.views[line.key] = (
                    WorkView(line) if line.kind == "work" else LineView(line)
                )
                log.mount(view, before=self._next_view(line.key))
                if line.for_me:
                    self.bell()
                    if line.options:
                        self.query_one("#hint", Static).update(pick_hint(line))
            else:
                view.refresh_line()
        if lines:
            log.scroll_end(animate=False)
        self._show_header()

    def _next_view(self, key: str) -> LineView | WorkView | None:
        """The view of the first line after ``key`` that is drawn (a turn's work goes under
        the message that started it, above what came since)."""
        keys = list(self.conversation.lines)
        after = keys[keys.index(key) + 1 :] if key in keys else []
        return next((self.views[k] for k in after if k in self.views), None)

    def action_toggle_work(self) -> None:
        """Expand (or collapse) the newest turn's work."""
        works = [view for view in self.views.values() if isinstance(view, WorkView)]
        if works:
            works[-1].action_toggle_details()

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
        self.conversation.agent = self.client.card.name or "agent"
        self.commands = card_commands(self.client.card) + CHAT_COMMANDS
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
        task_id = conversation.task_id
        while not conversation.ended and conversation.task_id == task_id:
            try:
                async for event in self.client.subscribe(task_id):
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
                if conversation.task_id != task_id:
                    return  # a new conversation began meanwhile: its own follower follows it
                self.note(f"connection lost ({exc}); reconnecting")
                await asyncio.sleep(RETRY_S)
                await self._catch_up()
        if conversation.ended and conversation.task_id == task_id:
            self._ended()
        self._show_header()

    def _ended(self) -> None:
        if self.conversation.is_conversation:
            self.note("the conversation has ended: Ctrl+N or /new starts a new one")

    async def _catch_up(self) -> None:
        """Messages the stream does not carry (other participants'), from the task itself."""
        assert self.client is not None
        try:
            task = await self.client.get_task(self.conversation.task_id)
        except Exception:
            return  # the next attempt will tell
        self.show(self.conversation.see_task(task))

    async def _send(self, parts: list[Part], what: str, shown: str | None = None) -> bool:
        """Send ``parts`` on the conversation (a new one when there is none); ``shown`` (the
        line as typed) is shown at once."""
        if self.client is None:
            self.note("not connected yet")
            return False
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.USER,
            parts=parts,
            task_id=self.conversation.task_id,
        )
        if shown is not None:
            self.show(self.conversation.said(message, shown))
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
        event.input.value = ""
        self.query_one("#hint", Static).update("")
        attached = self.attachments.command(text)
        if attached is not None:
            self.note(attached)
            return
        word, _, rest = text.partition(" ")
        if word == "/new":
            self.action_new_conversation()
            return
        if self.conversation.ended:
            if self.conversation.is_conversation:
                self.note("the conversation has ended: Ctrl+N or /new starts a new one")
                event.input.value = text
                return
            self._begin_anew()  # an agent whose tasks end with their answer: a task per message
        if word == "/invite":
            await self._invite(text, rest.split())
            return
        if await self._ui(text):  # /ui: the task's surfaces (accord.chat._a2ui)
            return
        text = self._picked(text)
        files = self.attachments.take()
        if not await self._send([Part(text=text), *files], "the message", shown=text):
            self.attachments.parts[:0] = files  # (kept for the next try)

    def _picked(self, text: str) -> str:
        """A number answers the help request waiting on you with that option."""
        if not text.isdigit() or not self.conversation.waiting_on_me:
            return text
        request = self.conversation.open_request
        if request is None or not 1 <= int(text) <= len(request.options):
            return text
        return request.options[int(text) - 1]

    async def _invite(self, typed: str, words: list[str]) -> None:
        usage = "usage: /invite ID [ROLE] (ROLE: " + ", ".join(PARTICIPANT_ROLES) + ")"
        if not 1 <= len(words) <= 2 or (len(words) == 2 and words[1] not in PARTICIPANT_ROLES):
            self.note(usage)
            return
        if self.client is None or not self.conversation.task_id:
            self.note("say something first: invite into a conversation that has begun")
            return
        try:
            task = await self.client.get_task(self.conversation.task_id, history_length=0)
        except Exception as exc:
            self.note(f"invite refused: {exc}")
            return
        people = participants_of(task.metadata)
        if people is None:
            self.note("this task is not a conversation: it has no participants")
            return
        role = words[1] if len(words) == 2 else None
        changed = with_participant(people, words[0], role=role)
        envelope = Part(data=participants_envelope(changed), media_type=EVENT_MEDIA_TYPE)
        await self._send([envelope], "the invitation", shown=typed)

    def _begin_anew(self) -> None:
        self.conversation.reset()
        self._show_header()

    def action_new_conversation(self) -> None:
        if self.conversation.task_id and not self.conversation.ended:
            self.note("a new conversation: the last one goes on (its task is left running)")
        else:
            self.note("a new conversation: say something to start it")
        self._begin_anew()

    async def _ui(self, text: str) -> bool:
        """``/ui``, ``/ui N VALUE``: draw, fill or press the task's surfaces' controls."""
        try:
            found = a2ui.command(text)
            if found is None:
                return False
            number, value = found
            if not number:
                self.note(self.conversation.ui.draw())
                return True
            did, part = self.conversation.ui.act(number, value)
        except ValueError as wrong:
            self.note(str(wrong))
            return True
        if part is None:
            self.note(f"{did}\n{self.conversation.ui.draw()}")
        elif await self._send([part], "the action"):
            self.note(did)
        return True

    @on(Input.Changed, "#input")
    def changed(self, event: Input.Changed) -> None:
        value = event.value
        hint = ""
        if not value and self.conversation.waiting_on_me:
            request = self.conversation.open_request
            if request is not None and request.options:
                hint = pick_hint(request)
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
