"""``ask_participant``: the tool a model (or a turn function) calls to ask a participant.

Its arguments are tiny-harness's intrinsic's: ``participant_id``, ``question`` (at least one
character) and ``options`` (strings, none by default). A successful call parks the task
awaiting the answer (:meth:`accord.harness.channels._desk.Channels.ask`) and ends the turn:
the model is not asked again until the reply resumes the task. A call that cannot be asked
is an error result the model reads. A turn function asks with
:func:`ask_participant_call`::

    from accord.harness.channels._tool import ask_participant_call

    async def turn(conversation):
        return ask_participant_call("bob", "Which venue?", options=["A", "B"])

and a scripted model with ``{"tool_calls": [{"name": "ask_participant", "arguments":
{"participant_id": "bob", "question": "Which venue?"}}]}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from accord.harness import _usage as usage
from accord.harness._moves import Who
from accord.harness._transcript import MODEL_CALL_KEY, ToolCall, ToolSpec
from accord.harness.channels._desk import ChannelError, Channels
from accord.harness.models._base import ModelResponse
from accord.harness.tools._base import ToolContext, ToolOutcome

ASK_PARTICIPANT = "ask_participant"

ASK_PARTICIPANT_SPEC = ToolSpec(
    name=ASK_PARTICIPANT,
    description=(
        "Ask one participant of the task a question and wait for their answer: the task "
        "waits (input required) until they reply, and their reply starts your next turn."
    ),
    parameters={
        "type": "object",
        "properties": {
            "participant_id": {"type": "string", "description": "whom to ask"},
            "question": {"type": "string", "minLength": 1},
            "options": {"type": "array", "items": {"type": "string"}, "default": []},
        },
        "required": ["participant_id", "question"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True, slots=True)
class AskCall:
    participant_id: str
    question: str
    options: tuple[str, ...] = ()


def ask_participant_call(
    participant_id: str, question: str, options: Sequence[str] = ()
) -> ModelResponse:
    """A turn function's answer that asks ``participant_id`` (see :class:`AskCall`)."""
    arguments: dict[str, Any] = {"participant_id": participant_id, "question": question}
    if options:
        arguments["options"] = list(options)
    return ModelResponse(text="", tool_calls=(ToolCall(ASK_PARTICIPANT, arguments),))


def parse_ask(arguments: dict[str, Any]) -> AskCall:
    """A call's arguments checked; ChannelError naming what is wrong."""
    unknown = sorted(set(arguments) - {"participant_id", "question", "options"})
    if unknown:
        raise ChannelError(f"ask_participant: unknown argument {unknown[0]!r}")
    participant = arguments.get("participant_id")
    question = arguments.get("question")
    options = arguments.get("options", [])
    if not isinstance(participant, str) or not participant:
        raise ChannelError("ask_participant: participant_id must be a participant's id")
    if not isinstance(question, str) or not question:
        raise ChannelError("ask_participant: question must be a non-empty string")
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise ChannelError("ask_participant: options must be a list of strings")
    return AskCall(participant, question, tuple(options))


class AskParticipant:
    """The ``ask_participant`` tool of a harness (its channels)."""

    spec = ASK_PARTICIPANT_SPEC
    idempotent = False  # (a question asked twice is asked twice)

    def __init__(self, channels: Channels) -> None:
        self.channels = channels

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        if context.task is None:
            return ToolOutcome("ask_participant needs the task", error=True)
        who = Who(context.sender, context.sender_role, context.correlation_id)
        # (the request answers this model call: a scripted model goes on after it)
        marks: dict[str, Any] = (
            {MODEL_CALL_KEY: context.model_call} if context.model_call >= 0 else {}
        )
        if context.used:  # (the turn ends here: its tokens go with the request)
            marks[usage.USAGE_KEY] = usage.metadata_of(context.used)
        try:
            ask = parse_ask(arguments)
            request = await self.channels.ask(
                context.task,
                who,
                ask.participant_id,
                ask.question,
                ask.options,
                metadata=marks or None,
            )
        except ChannelError as exc:
            return ToolOutcome(f"not asked: {exc}", error=True)
        return ToolOutcome(
            f"asked {ask.participant_id} (help request {request.id}): the task waits for the "
            "answer, which begins your next turn",
            ends_turn=True,
        )
