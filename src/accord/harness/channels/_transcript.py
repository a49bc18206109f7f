"""How channel messages read to the model.

- the harness's help request: ``[help request to bob] Which venue? (options: A, B)`` (one
  that relays a sub-task's question: its text in an untrusted block);
- the reply that answered it: ``Reply from bob to "Which venue?": A`` (tiny-harness's words);
- a reply that answered nothing: ``[help reply from carol, not the answer to "Which venue?"]
  B``;
- a channel message: its text, marked with its channel unless it is the task's own
  (``[on channel ops] …``), and its kind when it is a participant's help request;
- relays and what a sender was told are not shown (the model reads the message itself), nor
  the messages of channels the harness is not in.
"""

from __future__ import annotations

from functools import cached_property

from accord.harness._untrusted import untrusted
from accord.harness._wire import TaskExtension
from accord.harness.channels import _data as channel_data
from accord.harness.channels._decisions import HELP_KEY, NOTE_KEY
from accord.harness.channels._state import HelpRequest, members, state_of
from accord.harness.core._identity import claimed
from accord.harness.core._state import extension_of
from accord.wire import Message, Role, Task


class ChannelView:
    """A task's channels as one turn reads its history."""

    def __init__(self, task: Task, agent_id: str) -> None:
        self.task = task
        self.agent_id = agent_id
        state = state_of(task)
        self.requests = {request.id: request for request in state.requests}
        self.answers = {r.answered_by: r for r in state.requests if r.answered_by is not None}

    def hidden(self, message: Message) -> bool:
        """Whether the model does not read ``message`` at all."""
        marks = message.metadata
        if isinstance(marks, dict) and NOTE_KEY in marks:
            return True
        data = channel_data.of(message)
        if data is None or data.channel_id == self.task.id:
            return False
        extension = self.extension
        found = members(self.task, extension, data.channel_id) if extension else None
        return found is None or self.agent_id not in found

    @cached_property
    def extension(self) -> TaskExtension | None:
        return extension_of(self.task)

    def text(self, message: Message) -> str | None:
        """What the model reads of a channel message or a reply (None: it is neither)."""
        marks = message.metadata if isinstance(message.metadata, dict) else {}
        data = channel_data.of(message)
        answered = self.answers.get(message.message_id)
        if message.role is Role.AGENT:
            asked = marks.get(HELP_KEY)
            if isinstance(asked, dict) and data is not None:
                request = self.requests.get(message.message_id)
                if request is not None and request.relay:
                    child = request.relay.partition("#")[0]
                    head = f"[help request to {request.to}, relaying sub-task {child}'s question]"
                    return f"{head}\n{untrusted(f'sub-task:{child}', data.text)}"
                return _asked(data.text, asked)
        elif answered is not None:
            reply = data.content_text if data is not None else message.text()
            return f'Reply from {answered.to} to "{answered.question}": {reply}'
        if data is None:
            return None
        where = "" if data.channel_id == self.task.id else f"[on channel {data.channel_id}] "
        if message.role is Role.USER and data.kind == "help_reply":
            request = self.requests.get(data.in_reply_to or "")
            label = _unanswered(claimed(message) or "unknown", request)
            return f"{label}{where}{data.content_text}"
        if message.role is Role.USER and data.kind == "help_request":
            return f"[help request] {where}{data.content_text}"
        return where + data.content_text


def _asked(question: str, asked: dict[str, object]) -> str:
    options = asked.get("options")
    offered = ""
    if isinstance(options, list) and options:
        offered = f" (options: {', '.join(map(str, options))})"
    return f"[help request to {asked.get('to')}] {question}{offered}"


def _unanswered(sender: str, request: HelpRequest | None) -> str:
    if request is None:
        return f"[help reply from {sender}] "
    return f'[help reply from {sender}, not the answer to "{request.question}"] '
